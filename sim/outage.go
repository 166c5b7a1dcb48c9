package sim

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// OutageKind is how every model call fails during an Outage.
type OutageKind string

// The kinds of Outage.
const (
	// OutageStatus answers Outage.Status (DefaultOutageStatus if zero) with an OpenAI-style JSON error body. A 429
	// carries no Retry-After and no x-ratelimit-* headers: a wall of 429s that says nothing about when it ends.
	OutageStatus OutageKind = "status"
	// OutageHTML answers Outage.Status (DefaultOutageHTMLStatus if zero) with the HTML page nginx sends when the
	// upstream behind it is down ("<html><head><title>502 Bad Gateway</title>…").
	OutageHTML OutageKind = "html"
	// OutageRefuse makes the port refuse connections (ECONNREFUSED), as after the provider's process died. Only a
	// listener owner can do that: Serve closes the listening socket for the window and listens again on the same
	// port after it. A Server used as a bare http.Handler cannot refuse a connection; a request that reaches it in
	// a refuse window anyway has its connection closed without a response (like FaultDrop).
	OutageRefuse OutageKind = "refuse"
)

// OutageKinds lists the kinds of Outage, in the order the docs name them.
func OutageKinds() []OutageKind { return []OutageKind{OutageStatus, OutageHTML, OutageRefuse} }

// Defaults of Outage.Status.
const (
	DefaultOutageStatus     = http.StatusServiceUnavailable
	DefaultOutageHTMLStatus = http.StatusBadGateway
)

// FaultOutage is the fault of a model call that arrived during an Outage.
const FaultOutage = "outage"

// Outage is a window of time in which every model call (chat completions and embeddings, not /v1/models) fails
// the same way, after which the simulator answers as before: a provider that goes down and comes back.
type Outage struct {
	// After is when the outage starts, counted from the arrival of the simulator's first model call (by
	// Config.Now), so that a run's first answers land before it. 0 starts it with the first call.
	After time.Duration
	// For is how long it lasts; it must be positive.
	For time.Duration
	// Kind is how calls fail. Optional: defaults to OutageStatus.
	Kind OutageKind
	// Status is the HTTP status of OutageStatus (429, 500, 502, 503 or 504; default 503) and of OutageHTML (500,
	// 502, 503 or 504; default 502). It must be 0 for OutageRefuse.
	Status int
}

// outageStatuses are the statuses each kind may answer.
var outageStatuses = map[OutageKind][]int{
	OutageStatus: {http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout},
	OutageHTML: {http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout},
}

// withDefaults fills Kind and Status.
func (o Outage) withDefaults() Outage {
	if o.Kind == "" {
		o.Kind = OutageStatus
	}
	if o.Status == 0 {
		switch o.Kind {
		case OutageStatus:
			o.Status = DefaultOutageStatus
		case OutageHTML:
			o.Status = DefaultOutageHTMLStatus
		}
	}
	return o
}

// String describes the outage, e.g. "503 for 1m30s from 10s after the first call".
func (o Outage) String() string {
	o = o.withDefaults()
	what := "refused connections"
	switch o.Kind {
	case OutageStatus:
		what = strconv.Itoa(o.Status)
	case OutageHTML:
		what = strconv.Itoa(o.Status) + " HTML"
	}
	return fmt.Sprintf("%s for %v from %v after the first call", what, o.For, o.After)
}

// validateOutages checks each outage and that no two windows overlap.
func validateOutages(outages []Outage) error {
	var errs []error
	for i, o := range outages {
		p := fmt.Sprintf("outages[%d]", i)
		if o.After < 0 {
			errs = append(errs, fmt.Errorf("%s.after %v: want a duration >= 0 from the first model call", p, o.After))
		}
		if o.For <= 0 {
			errs = append(errs, fmt.Errorf("%s.for %v: want a positive duration", p, o.For))
		}
		d := o.withDefaults()
		switch d.Kind {
		case OutageStatus, OutageHTML:
			if !slices.Contains(outageStatuses[d.Kind], d.Status) {
				errs = append(errs, fmt.Errorf("%s.status %d: want one of %v for kind %q", p, o.Status,
					outageStatuses[d.Kind], d.Kind))
			}
		case OutageRefuse:
			if o.Status != 0 {
				errs = append(errs, fmt.Errorf("%s.status %d: a refused connection has no status; leave it 0", p, o.Status))
			}
		default:
			errs = append(errs, fmt.Errorf("%s.kind %q: want one of %q", p, o.Kind, OutageKinds()))
		}
	}
	if len(errs) == 0 {
		w := sortedOutages(outages)
		for i := 1; i < len(w); i++ {
			if w[i].After < w[i-1].After+w[i-1].For {
				errs = append(errs, fmt.Errorf("outages %v and %v overlap", w[i-1], w[i]))
			}
		}
	}
	return errors.Join(errs...)
}

// sortedOutages returns a copy of outages with defaults applied, in order of start.
func sortedOutages(outages []Outage) []Outage {
	w := make([]Outage, len(outages))
	for i, o := range outages {
		w[i] = o.withDefaults()
	}
	slices.SortStableFunc(w, func(a, b Outage) int { return int(a.After - b.After) })
	return w
}

// epoch returns the arrival of the first model call, setting it to now if this is that call.
func (s *Server) epoch(now time.Time) time.Time {
	s.firstOnce.Do(func() {
		s.first = now
		close(s.firstCall)
	})
	return s.first
}

// FirstCall returns when the first model call arrived, by Config.Now, and false before there was one. Outages
// are counted from it: outage o runs from FirstCall()+o.After to FirstCall()+o.After+o.For.
func (s *Server) FirstCall() (time.Time, bool) {
	select {
	case <-s.firstCall:
		return s.first, true
	default:
		return time.Time{}, false
	}
}

// outageAt returns the outage a model call arriving at t falls in. A window is [start, start+For): a call
// arriving at its end is answered normally.
func (s *Server) outageAt(t time.Time) (Outage, bool) {
	since := t.Sub(s.epoch(t))
	for _, o := range s.outages {
		if since >= o.After && since < o.After+o.For {
			return o, true
		}
	}
	return Outage{}, false
}

// failOutage answers a model call that arrived during outage o, at once (a proxy or load balancer in front of a
// dead upstream does not make the caller wait), without reading the body, and records it with FaultOutage.
func (s *Server) failOutage(w http.ResponseWriter, rec *Request, o Outage) {
	rec.Fault = FaultOutage
	switch o.Kind {
	case OutageRefuse:
		s.send(*rec, nil)
		abort(w)
	case OutageHTML:
		rec.Status = o.Status
		body := []byte(nginxPage(o.Status))
		s.send(*rec, func() error {
			h := w.Header()
			h.Set("Content-Type", "text/html")
			h.Set("Server", "nginx")
			h.Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(o.Status)
			if _, err := w.Write(body); err != nil {
				return err
			}
			return http.NewResponseController(w).Flush() // as writeJSON: flushed before Done is recorded
		})
	default:
		rec.Status = o.Status
		typ, code, msg := "server_error", "", ""
		switch o.Status {
		case http.StatusTooManyRequests:
			typ, code = "requests", "rate_limit_exceeded"
			msg = "Rate limit reached for requests. Please try again later. (simulated outage)"
		case http.StatusInternalServerError:
			msg = "The server had an error while processing your request. Sorry about that! (simulated outage)"
		case http.StatusBadGateway:
			msg = "Bad gateway. (simulated outage)"
		case http.StatusGatewayTimeout:
			msg = "Gateway timeout. (simulated outage)"
		default:
			msg = "The server is overloaded or not ready yet. (simulated outage)"
		}
		s.send(*rec, func() error { return writeError(w, rec.Status, typ, code, "", msg) })
	}
}

// nginxPage is the error page nginx sends for status.
func nginxPage(status int) string {
	title := strconv.Itoa(status) + " " + http.StatusText(status)
	return "<html>\r\n<head><title>" + title + "</title></head>\r\n<body>\r\n<center><h1>" + title +
		"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
}
