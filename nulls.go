package waitroom

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A JSON null in a request body is refused, not read as absent: decoding
// into a Go struct cannot tell {"capacity":null} from {}, so a client that
// meant to clear a field would get its default without a word, where
// {"capacity":[]} is refused. The document (openapi.json) types no request
// field as nullable; a body where null has a meaning of its own (a JSON
// merge patch, where it removes a field) is decoded into a raw form
// (json.RawMessage, a map or any), which DecodeJSON leaves to its caller.

// keepsNulls reports whether v is a raw target whose caller reads nulls
// itself.
func keepsNulls(v any) bool {
	switch v.(type) {
	case *json.RawMessage, *any, *map[string]any, *map[string]json.RawMessage:
		return true
	}
	return false
}

// checkNoNull returns the CodeInvalidJSON error of the first null in data
// (one valid JSON value), naming where it is.
func checkNoNull(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	where, err := findNull(dec, "")
	if err != nil || where == "" {
		// A decoding error here was already DecodeJSON's to report.
		return nil
	}
	if where == "." {
		return Errorf(CodeInvalidJSON, "The body is null; send a JSON object (or, where the body is optional, nothing).")
	}
	return Errorf(CodeInvalidJSON, "Field %s is null; leave a field out for its default rather than sending null.", strconv.Quote(where))
}

// findNull reads one value from dec and returns the path of its first null
// ("." for the value itself), or "" when it holds none.
func findNull(dec *json.Decoder, path string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	here := path
	if here == "" {
		here = "."
	}
	switch t := tok.(type) {
	case nil:
		return here, nil
	case json.Delim:
		for i := 0; dec.More(); i++ {
			child := path + "[" + strconv.Itoa(i) + "]"
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return "", err
				}
				key, _ := k.(string)
				child = key
				if path != "" {
					child = path + "." + key
				}
			}
			if where, err := findNull(dec, child); where != "" || err != nil {
				return where, err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return "", err
		}
	}
	return "", nil
}
