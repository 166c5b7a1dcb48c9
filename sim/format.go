package sim

import (
	"encoding/json"
	"fmt"
)

// responseFormat is what a chat request's response_format asks for.
type responseFormat struct {
	// kind is "" (none given), "text", "json_object" or "json_schema".
	kind string
	// enum are the values of the schema's properties.answer.enum: the option ids the answer is one of. Nil when
	// the schema leaves the answer free (or for json_object).
	enum []string
	// reason is set when the schema has a reason property: the answer carries one.
	reason bool
	// stated are the keys of a schema of stated probabilities: an object whose properties are all numbers
	// (silico's verbalized answer, one per option id), in the order of the schema's required list. Nil for an
	// answer schema.
	stated []string
}

// json reports whether the answer is a JSON object.
func (f responseFormat) json() bool { return f.kind == "json_object" || f.kind == "json_schema" }

// parseResponseFormat reads a response_format: absent or null, {"type":"text"}, {"type":"json_object"}, or
// {"type":"json_schema","json_schema":{"name":..,"schema":{..},"strict":..}}. The simulator writes answers to
// schemas with an answer property (a string, optionally with an enum of option ids) and an optional reason
// property; any other schema is refused rather than answered with JSON it does not match.
func parseResponseFormat(raw json.RawMessage) (responseFormat, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return responseFormat{}, nil
	}
	var rf struct {
		Type       *string                    `json:"type"`
		JSONSchema map[string]json.RawMessage `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return responseFormat{}, fmt.Errorf("response_format: want an object such as {\"type\": \"json_schema\", "+
			"\"json_schema\": {\"name\": ..., \"schema\": {...}}}: %w", err)
	}
	if rf.Type == nil {
		return responseFormat{}, fmt.Errorf("missing required parameter: 'response_format.type' " +
			"(want \"text\", \"json_object\" or \"json_schema\")")
	}
	f := responseFormat{kind: *rf.Type}
	switch f.kind {
	case "text", "json_object":
		return f, nil
	case "json_schema":
	default:
		return responseFormat{}, fmt.Errorf("invalid value for 'response_format.type': %q; want \"text\", "+
			"\"json_object\" or \"json_schema\"", f.kind)
	}
	if rf.JSONSchema == nil {
		return responseFormat{}, fmt.Errorf("missing required parameter: 'response_format.json_schema' " +
			"(an object with name and schema)")
	}
	var name string
	if err := json.Unmarshal(rf.JSONSchema["name"], &name); err != nil || name == "" {
		return responseFormat{}, fmt.Errorf("response_format.json_schema.name: want a non-empty string")
	}
	if s, ok := rf.JSONSchema["strict"]; ok {
		var strict *bool
		if err := json.Unmarshal(s, &strict); err != nil {
			return responseFormat{}, fmt.Errorf("response_format.json_schema.strict: want true or false")
		}
	}
	var schema struct {
		Type       *string                    `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if raw, ok := rf.JSONSchema["schema"]; !ok || json.Unmarshal(raw, &schema) != nil || string(raw) == "null" {
		return responseFormat{}, fmt.Errorf("response_format.json_schema.schema: want a JSON Schema object")
	}
	if schema.Type != nil && *schema.Type != "object" {
		return responseFormat{}, fmt.Errorf("response_format.json_schema.schema.type: %q; the simulator answers "+
			"objects (\"type\": \"object\")", *schema.Type)
	}
	if ids, ok := statedKeys(schema.Properties, schema.Required); ok {
		f.stated = ids
		return f, nil
	}
	answer, ok := schema.Properties["answer"]
	if !ok {
		return responseFormat{}, fmt.Errorf("response_format.json_schema.schema.properties: no answer property; " +
			"the simulator answers schemas with properties.answer (a string, optionally with an enum of option ids) " +
			"and an optional reason, or schemas whose properties are all numbers (stated probabilities)")
	}
	var a struct {
		Enum json.RawMessage `json:"enum"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return responseFormat{}, fmt.Errorf("response_format.json_schema.schema.properties.answer: want a schema object")
	}
	if len(a.Enum) > 0 {
		if err := json.Unmarshal(a.Enum, &f.enum); err != nil || len(f.enum) == 0 {
			return responseFormat{}, fmt.Errorf("response_format.json_schema.schema.properties.answer.enum: " +
				"want a non-empty list of strings (the option ids)")
		}
	}
	_, f.reason = schema.Properties["reason"]
	return f, nil
}

// statedKeys returns the keys of a schema of stated probabilities: every property {"type":"number"}, at least
// two, each required; in the required list's order (the option order silico sends). ok is false for any other
// schema.
func statedKeys(props map[string]json.RawMessage, required []string) ([]string, bool) {
	if len(props) < 2 || len(required) != len(props) {
		return nil, false
	}
	for _, id := range required {
		var p struct {
			Type string `json:"type"`
		}
		raw, ok := props[id]
		if !ok || json.Unmarshal(raw, &p) != nil || p.Type != "number" {
			return nil, false
		}
	}
	return required, true
}
