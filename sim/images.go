package sim

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/silicolab/silico/llm"
)

// imageTokens is what the pictures of a request cost. A data URL is decoded; a URL is downloaded (as a provider
// does) to learn its size. A picture that cannot be read is a 400, naming the parameter at fault.
func (s *Server) imageTokens(ctx context.Context, parts []imagePart) (int, string, error) {
	total := 0
	for _, p := range parts {
		switch p.Detail {
		case "", "auto", "low", "high":
		default:
			return 0, "image_url.detail", fmt.Errorf("invalid detail %q: want low, high or auto", p.Detail)
		}
		data, err := imageBytes(ctx, p.URL)
		if err != nil {
			return 0, "image_url", err
		}
		w, h, err := llm.ImageSize(data)
		if err != nil {
			return 0, "image_url", err
		}
		total += llm.ImageTokens(w, h, p.Detail)
	}
	return total, "", nil
}

// imageBytes reads a picture's bytes from a data URL or by downloading it.
func imageBytes(ctx context.Context, u string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		_, payload, ok := strings.Cut(rest, ";base64,")
		if !ok {
			return nil, fmt.Errorf("invalid image data URL: want data:image/<type>;base64,<bytes>")
		}
		return base64.StdEncoding.DecodeString(payload)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid image URL: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("error while downloading %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("error while downloading %s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 20<<20))
}
