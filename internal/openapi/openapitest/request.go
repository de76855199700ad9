package openapitest

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ValidateRequestBody checks body against the JSON schema of the request
// body of method on the path template (as the document writes it, such as
// "/v1/rooms/{room}"). It returns nil when the document accepts the body,
// the validation error when it does not, and an error too when the
// operation has no JSON request body. An empty body is accepted where the
// body is not required. Tests that send generated bodies use it to tell
// which the server must refuse.
func ValidateRequestBody(method, template string, body []byte) error {
	s, err := load()
	if err != nil {
		return err
	}
	op := "/paths/" + esc(template) + "/" + strings.ToLower(method)
	rb, ptr, err := s.at(op + "/requestBody")
	if err != nil {
		return fmt.Errorf("%s %s has no request body: %w", method, template, err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if req, _ := rb["required"].(bool); req {
			return fmt.Errorf("the body is required")
		}
		return nil
	}
	if _, _, err := s.at(ptr + "/content/application~1json/schema"); err != nil {
		return fmt.Errorf("%s %s takes no JSON body: %w", method, template, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	sch, err := s.schema(ptr + "/content/application~1json/schema")
	if err != nil {
		return err
	}
	return sch.Validate(v)
}
