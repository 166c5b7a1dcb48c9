package workerhost

import (
	"strings"
	"testing"

	"github.com/silicolab/silico/wire"
)

func TestCreateHintNamesEveryCommand(t *testing.T) {
	want := wire.SearchAttributes()
	hint := createHint("research", want, sortedKeys(want))
	for name := range want {
		cmd := "temporal operator search-attribute create --namespace research --name " + name + " --type Keyword"
		if !strings.Contains(hint, cmd) {
			t.Errorf("hint lacks %q:\n%s", cmd, hint)
		}
	}
}
