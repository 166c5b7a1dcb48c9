package experiment

import "github.com/silicolab/silico/suggest"

// CachePolicy says how a model's calls use the response cache: the results store keeps every answer under a
// digest of the request that produced it (endpoint, model, messages, seed and parameters), and a later call with
// the same digest can be served from it instead of the provider.
type CachePolicy string

// Cache policies. The empty policy is CacheReadWrite.
const (
	// CacheReadWrite serves cells from the cache when it holds them and stores every fresh answer.
	CacheReadWrite CachePolicy = "read_write"
	// CacheRead serves cells from the cache but stores nothing.
	CacheRead CachePolicy = "read"
	// CacheWrite calls the provider for every cell and stores the answers (refreshing the cache).
	CacheWrite CachePolicy = "write"
	// CacheOff neither reads nor writes the cache.
	CacheOff CachePolicy = "off"
)

var cachePolicies = []string{string(CacheReadWrite), string(CacheRead), string(CacheWrite), string(CacheOff)}

// Reads reports whether cells may be served from the cache.
func (p CachePolicy) Reads() bool { return p == "" || p == CacheReadWrite || p == CacheRead }

// Writes reports whether fresh answers are stored in the cache.
func (p CachePolicy) Writes() bool { return p == "" || p == CacheReadWrite || p == CacheWrite }

// CachePolicy is the policy of model m's calls: the model's own cache setting, else run.cache, else read_write.
func (s *Spec) CachePolicy(m Model) CachePolicy {
	switch {
	case m.Cache != "":
		return m.Cache
	case s.Run.Cache != "":
		return s.Run.Cache
	}
	return CacheReadWrite
}

// DisableCache turns the cache off for the whole run and every model (starter run --no-cache).
func (s *Spec) DisableCache() {
	s.Run.Cache = CacheOff
	for i := range s.Models {
		s.Models[i].Cache = CacheOff
	}
}

func checkCachePolicy(errs *Errors, path string, p CachePolicy) {
	if p != "" && !contains(cachePolicies, string(p)) {
		errs.add(path, "unknown cache policy %q%s; want %s", p, suggest.DidYouMean(string(p), cachePolicies), oneOf(cachePolicies))
	}
}
