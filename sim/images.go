package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF for DecodeConfig
	_ "image/jpeg" // registers JPEG for DecodeConfig
	_ "image/png"  // registers PNG for DecodeConfig
	"io"
	"net/http"
	"strings"
	"time"
)

// Image token accounting of OpenAI's vision models (GPT-4o, GPT-4o mini's tile sizes): detail low costs a flat
// imageBaseTokens; high and auto scale the picture to fit within 2048×2048, then down so that its shortest side
// is at most 768, and cost imageTileTokens per 512-pixel tile plus imageBaseTokens. Pictures are never scaled up.
const (
	imageBaseTokens = 85
	imageTileTokens = 170
	imageTile       = 512
)

// ImageTokens is what a w×h picture costs at detail ("low", "high", "auto" or "").
func ImageTokens(w, h int, detail string) int {
	if detail == "low" || w <= 0 || h <= 0 {
		return imageBaseTokens
	}
	fw, fh := float64(w), float64(h)
	if fw > 2048 || fh > 2048 {
		r := 2048 / max(fw, fh)
		fw, fh = fw*r, fh*r
	}
	if short := min(fw, fh); short > 768 {
		r := 768 / short
		fw, fh = fw*r, fh*r
	}
	tiles := ceilDiv(int(fw), imageTile) * ceilDiv(int(fh), imageTile)
	return imageTileTokens*tiles + imageBaseTokens
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ImageSize decodes the size of a PNG, JPEG or GIF picture from its bytes.
func ImageSize(data []byte) (w, h int, err error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, fmt.Errorf("not a PNG, JPEG or GIF image: %w", err)
	}
	return cfg.Width, cfg.Height, nil
}

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
		w, h, err := ImageSize(data)
		if err != nil {
			return 0, "image_url", err
		}
		total += ImageTokens(w, h, p.Detail)
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
