package devserver

import (
	"context"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/serialization"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/resolver"
)

// TestEnsureNamespace registers a namespace and its search attributes without
// a server, as Start does before the server runs.
func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	cfg := memorySQLConfig()
	const ns = "ns"
	kw, num := enums.INDEXED_VALUE_TYPE_KEYWORD, enums.INDEXED_VALUE_TYPE_INT

	steps := []struct {
		name    string
		attrs   map[string]enums.IndexedValueType
		wantErr string // substring; "" for success
		want    map[string]enums.IndexedValueType
	}{
		{name: "create", attrs: map[string]enums.IndexedValueType{"A": kw}, want: map[string]enums.IndexedValueType{"A": kw}},
		{name: "same again", attrs: map[string]enums.IndexedValueType{"A": kw}, want: map[string]enums.IndexedValueType{"A": kw}},
		{name: "add one", attrs: map[string]enums.IndexedValueType{"A": kw, "B": kw, "N": num},
			want: map[string]enums.IndexedValueType{"A": kw, "B": kw, "N": num}},
		{name: "fewer keeps all", attrs: nil, want: map[string]enums.IndexedValueType{"A": kw, "B": kw, "N": num}},
		{name: "type change", attrs: map[string]enums.IndexedValueType{"A": num}, wantErr: "registered as Keyword, want Int"},
		{name: "reserved", attrs: map[string]enums.IndexedValueType{"WorkflowId": kw}, wantErr: "reserved"},
		{name: "unspecified", attrs: map[string]enums.IndexedValueType{"X": enums.INDEXED_VALUE_TYPE_UNSPECIFIED}, wantErr: "unspecified"},
	}
	for _, st := range steps {
		err := ensureNamespace(ctx, cfg, ns, st.attrs)
		switch {
		case st.wantErr == "" && err != nil:
			t.Fatalf("%s: ensureNamespace(%v): %v", st.name, st.attrs, err)
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Fatalf("%s: ensureNamespace(%v) error = %v, want %q", st.name, st.attrs, err, st.wantErr)
		case st.wantErr != "":
			continue
		}
		if got := registered(ctx, t, cfg, ns); !equalAttrs(got, st.want) {
			t.Errorf("%s: registered attributes = %v, want %v", st.name, got, st.want)
		}
	}
}

// registered reads the namespace's custom search attributes by name.
func registered(ctx context.Context, t *testing.T, cfg *config.SQL, ns string) map[string]enums.IndexedValueType {
	t.Helper()
	db, err := sql.NewSQLDB(sqlplugin.DbKindMain, cfg, resolver.NewNoopResolver(), serverlog.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	row, err := selectNamespace(ctx, db, ns)
	if err != nil || row == nil {
		t.Fatalf("namespace %q: row %v, %v", ns, row, err)
	}
	enc, err := enums.EncodingTypeFromString(row.DataEncoding)
	if err != nil {
		t.Fatal(err)
	}
	detail, err := serialization.NewSerializer().NamespaceDetailFromBlob(&commonpb.DataBlob{Data: row.Data, EncodingType: enc})
	if err != nil {
		t.Fatal(err)
	}
	if got := detail.GetConfig().GetRetention().AsDuration(); got != DefaultRetention {
		t.Errorf("retention = %v, want %v", got, DefaultRetention)
	}
	out := map[string]enums.IndexedValueType{}
	for col, name := range detail.GetConfig().GetCustomSearchAttributeAliases() {
		switch {
		case strings.HasPrefix(col, "Keyword"):
			out[name] = enums.INDEXED_VALUE_TYPE_KEYWORD
		case strings.HasPrefix(col, "Int"):
			out[name] = enums.INDEXED_VALUE_TYPE_INT
		default:
			t.Errorf("attribute %q in unexpected column %q", name, col)
		}
	}
	return out
}

// equalAttrs reports whether a and b hold the same attributes.
func equalAttrs(a, b map[string]enums.IndexedValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
