// Package specfile reads experiment specs: spec files (YAML or JSON), workflow inputs and the resolved spec the
// results store keeps, all through one decoder. It turns them into an experiment.Spec that is resolved (CSV
// personas and items inlined, option maps turned into lists), defaulted and validated, and reports every mistake
// at once as experiment.Errors, each at "file:line:col: field: message":
//
//	bad.yaml:22:3: run.on_eror: unknown key "on_eror" (did you mean "on_error"?); accepted keys: ...
//
// It owns the file format: positions (node.go parses YAML and JSON into nodes that keep them), the tables of
// keys, the CSV files of personas and items, the seed-000 framework's JSON (framework.go), notes about keys
// accepted without effect, and "did you mean" hints. Package experiment keeps the domain: the Spec types,
// defaults, validation, planning, rendering and matching. specfile imports experiment, never the reverse.
//
// # One table per section
//
// Each section of the format (the spec, a model, its params, run, simulator, ...) has one table in sections.go,
// one row per key: the key's name, the field it fills and how its value is decoded:
//
//	field("max_attempts", func(r *experiment.RunSettings) *int { return &r.MaxAttempts }, (*decoder).integer),
//
// The decoder is a typed func: a generic kind ((*decoder).str, integer, number, numberPtr, boolean, duration,
// strings, attributes, seeds, text[S] for string types), another section's table (paramKeys.decode, decodePtr
// for an optional section, listOf for a list of sections) or a decoder of its own (prompt, personas, items,
// options). The table is the only list of the section's keys: unknown-key errors, their "did you mean" hints
// and "want a mapping with keys ..." messages come from it. A key's name is the json tag of its field, so the
// JSON form of a resolved Spec is itself a spec file; TestTablesMatchJSONTags fails when a table and the json
// tags of its type disagree, or when a struct type a Spec holds has no table.
//
// # Adding a field
//
// Add the field, with its json tag, to the type in package experiment (and its default and check there, if it
// has any); then add its row to the section's table here, in the position of the field. A new section (a new
// struct type) gets its own table, and a row in its parent's table that decodes it with the new table's decode.
// The framework's format (framework.go) has keys of its own; it shares rows of these tables with only.
package specfile
