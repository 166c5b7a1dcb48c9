package llm

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF for DecodeConfig
	_ "image/jpeg" // registers JPEG for DecodeConfig
	_ "image/png"  // registers PNG for DecodeConfig
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
