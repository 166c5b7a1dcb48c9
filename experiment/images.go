package experiment

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ImageSettings say how a run fetches the pictures of its items and personas. Zero values mean the defaults.
type ImageSettings struct {
	// MaxConcurrentDownloads caps the pictures one pass downloads at once (default 8). Size it so that
	// max_concurrent_downloads ≥ ⌈RPM/60 × pictures per cell × download latency in seconds⌉ (docs/performance.md).
	MaxConcurrentDownloads int `json:"max_concurrent_downloads,omitempty"`
	// OnFailure is what a picture that cannot be fetched does to its cell: raise (default: the cell fails with
	// class ImageUnavailable) or skip (the picture is left out, the rest is sent, and the cell's error_message
	// says which picture was skipped and why).
	OnFailure string `json:"on_failure,omitempty"`
	// Detail is the detail level sent with every picture: auto (default), low or high.
	Detail string `json:"detail,omitempty"`
}

// ImageTransport is how a picture reaches the model.
type ImageTransport string

// Image transports.
const (
	// ImageInline sends the bytes the worker fetched as a data URL, so the model sees exactly the bytes whose
	// digest the cell records.
	ImageInline ImageTransport = "inline"
	// ImageURL sends the URL; the provider fetches it. The worker still fetches the bytes for their digest.
	ImageURL ImageTransport = "url"
)

// Defaults and values of ImageSettings.
const (
	DefaultMaxConcurrentDownloads = 8
	ImageRaise                    = "raise"
	ImageSkip                     = "skip"
	ImageDetailAuto               = "auto"
	ImageDetailLow                = "low"
	ImageDetailHigh               = "high"
)

var (
	imageTransports = []string{string(ImageInline), string(ImageURL)}
	imageFailures   = []string{ImageRaise, ImageSkip}
	imageDetails    = []string{ImageDetailAuto, ImageDetailLow, ImageDetailHigh}
)

// ImageTransport is how model m receives pictures: its own setting, else run.image_transport, else inline.
func (s *Spec) ImageTransport(m Model) ImageTransport {
	return cmp.Or(m.ImageTransport, s.Run.ImageTransport, ImageInline)
}

// HasImages says whether any item or persona shows a picture.
func (s *Spec) HasImages() bool {
	for _, it := range s.Questionnaire.Items {
		if len(it.Images) > 0 {
			return true
		}
	}
	for _, p := range s.Personas {
		if len(p.Images) > 0 {
			return true
		}
	}
	return false
}

// CheckImageRef says what is wrong with a picture reference of a resolved spec, or "" when it is one: an https
// URL, an http URL of a loopback host (local servers and tests), or a data URL of an image.
func CheckImageRef(ref string) string {
	if strings.HasPrefix(ref, "data:") {
		if !strings.HasPrefix(ref, "data:image/") || !strings.Contains(ref, ";base64,") {
			return "a data URL must be data:image/<type>;base64,<bytes>"
		}
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" {
		return fmt.Sprintf("%q is not a URL; want an https URL, an http URL of localhost, or a file path relative to the spec", ref)
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if LoopbackHost(u.Hostname()) {
			return ""
		}
		return fmt.Sprintf("%q is plain http; want https (http is accepted only for localhost, 127.0.0.1 and ::1)", ref)
	}
	return fmt.Sprintf("%q has scheme %q; want an https URL, an http URL of localhost, or a file path relative to the spec", ref, u.Scheme)
}

// LoopbackHost says whether host names this machine.
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Spec) checkImages(errs *Errors) {
	im := s.Image
	nonNegative(errs, "image.max_concurrent_downloads", im.MaxConcurrentDownloads, "a number of downloads ≥ 0 (0: 8)")
	if im.OnFailure != "" && !contains(imageFailures, im.OnFailure) {
		errs.add("image.on_failure", "unknown policy %q; want %s", im.OnFailure, oneOf(imageFailures))
	}
	if im.Detail != "" && !contains(imageDetails, im.Detail) {
		errs.add("image.detail", "unknown detail %q; want %s", im.Detail, oneOf(imageDetails))
	}
	checkTransport := func(path string, t ImageTransport) {
		if t != "" && !contains(imageTransports, string(t)) {
			errs.add(path, "unknown transport %q; want %s", t, oneOf(imageTransports))
		}
	}
	checkTransport("run.image_transport", s.Run.ImageTransport)
	for i, m := range s.Models {
		checkTransport(fmt.Sprintf("models[%d].image_transport", i), m.ImageTransport)
	}
	checkRefs := func(path string, refs []string) {
		for j, r := range refs {
			if msg := CheckImageRef(r); msg != "" {
				errs.add(fmt.Sprintf("%s.images[%d]", path, j), "%s", msg)
			}
		}
	}
	for i, it := range s.Questionnaire.Items {
		checkRefs(fmt.Sprintf("questionnaire.items[%d]", i), it.Images)
	}
	for i, p := range s.Personas {
		checkRefs(fmt.Sprintf("personas[%d]", i), p.Images)
	}
}

// applyDefaults fills the zero values of ImageSettings.
func (im *ImageSettings) applyDefaults() {
	if im.MaxConcurrentDownloads == 0 {
		im.MaxConcurrentDownloads = DefaultMaxConcurrentDownloads
	}
	if im.OnFailure == "" {
		im.OnFailure = ImageRaise
	}
	if im.Detail == "" {
		im.Detail = ImageDetailAuto
	}
}

// attachImages puts the pictures of cell c on the messages Render built: the persona's pictures on the user
// message whose template holds {persona_description}, or on the current item's user message (the last one) when
// that placeholder is in a system message or absent; the item's pictures on the last user message, after the
// persona's. A system message never holds a picture (providers accept pictures only from the user). shift is
// how many history messages Render put after the prompt's first message (cumulative mode); earlier turns are
// replayed as text, without their pictures.
func (rt *compiled) attachImages(out []Message, shift int, c Cell) {
	persona, item := rt.personas[c.Persona].Images, rt.items[c.Item].Images
	if len(persona) == 0 && len(item) == 0 {
		return
	}
	last := len(out) - 1
	for last >= 0 && out[last].Role != RoleUser {
		last--
	}
	if last < 0 {
		return // Validate refuses pictures with a prompt that has no user message
	}
	at := last
	pr := &rt.prompts[c.PromptVariant]
	for i, t := range pr.msgs {
		if pr.roles[i] == RoleUser && t.has(segPersona) {
			if i > 0 {
				i += shift
			}
			at = i
			break
		}
	}
	out[at].Images = append(out[at].Images, persona...)
	out[last].Images = append(out[last].Images, item...)
}

// has says whether t holds a placeholder of kind k.
func (t template) has(k segKind) bool {
	for _, s := range t {
		if s.kind == k {
			return true
		}
	}
	return false
}
