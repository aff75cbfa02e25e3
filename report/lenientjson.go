package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DecodeResultObjects decodes every top-level JSON value of data into a
// generic object. Arrays contribute their elements. Anything that is not an
// object is an error naming its byte offset.
func DecodeResultObjects(data []byte) ([]map[string]any, error) {
	clean, shifts := replacePythonLiterals(data)
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.UseNumber()
	var objects []map[string]any
	for {
		start := dec.InputOffset()
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, describeJSONError(data, remapOffsets(err, shifts))
		}
		offset := originalOffset(skipSpace(clean, start), shifts)
		switch v := v.(type) {
		case map[string]any:
			objects = append(objects, v)
		case []any:
			for i, elem := range v {
				obj, ok := elem.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("element %d of the array at byte offset %d is %s, want a result object", i, offset, jsonKind(elem))
				}
				objects = append(objects, obj)
			}
		default:
			return nil, fmt.Errorf("value at byte offset %d is %s, want a result object ({...})", offset, jsonKind(v))
		}
	}
	if len(objects) == 0 {
		return nil, errors.New("no result object found (the file is empty); point at a --save-result JSON file")
	}
	return objects, nil
}

func skipSpace(b []byte, from int64) int64 {
	for from < int64(len(b)) && isJSONSpace(b[from]) {
		from++
	}
	return from
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// offsetShift records that the byte at Clean in the cleaned input came from
// Original in the file, after a replaced Python literal.
type offsetShift struct{ clean, original int64 }

// replacePythonLiterals turns Python json.dumps' NaN, Infinity and
// -Infinity (invalid JSON) outside strings into null, "inf" and "-inf", and
// returns where offsets moved so errors can name the file's real offset.
func replacePythonLiterals(data []byte) ([]byte, []offsetShift) {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data, nil
	}
	out := make([]byte, 0, len(data)+16)
	var shifts []offsetShift
	inString, escaped := false, false
	for i := 0; i < len(data); {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			i++
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			i++
			continue
		}
		replaced := false
		for _, lit := range pythonLiterals {
			if bytes.HasPrefix(data[i:], lit.from) && !isIdentByte(data, i+len(lit.from)) && (i == 0 || !isIdentByteAt(data[i-1])) {
				out = append(out, lit.to...)
				i += len(lit.from)
				shifts = append(shifts, offsetShift{clean: int64(len(out)), original: int64(i)})
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, c)
			i++
		}
	}
	return out, shifts
}

var pythonLiterals = []struct{ from, to []byte }{
	{[]byte("-Infinity"), []byte(`"-inf"`)},
	{[]byte("Infinity"), []byte(`"inf"`)},
	{[]byte("NaN"), []byte("null")},
}

func isIdentByte(b []byte, i int) bool { return i < len(b) && isIdentByteAt(b[i]) }

func isIdentByteAt(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func originalOffset(clean int64, shifts []offsetShift) int64 {
	delta := int64(0)
	for _, s := range shifts {
		if s.clean > clean {
			break
		}
		delta = s.original - s.clean
	}
	return clean + delta
}

func remapOffsets(err error, shifts []offsetShift) error {
	if len(shifts) == 0 {
		return err
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		copied := *syntax
		copied.Offset = originalOffset(syntax.Offset, shifts)
		return &copied
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		copied := *typeErr
		copied.Offset = originalOffset(typeErr.Offset, shifts)
		return &copied
	}
	return err
}

// describeJSONError names the byte offset (and line:column) of a JSON error.
func describeJSONError(data []byte, err error) error {
	var offset int64 = -1
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		offset = syntax.Offset
		// encoding/json counts the offending byte as read; name its position.
		if strings.HasPrefix(syntax.Error(), "invalid character") && offset > 0 {
			offset--
		}
	case errors.As(err, &typeErr):
		offset = typeErr.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		offset = int64(len(data))
	}
	if offset < 0 {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	line, col := lineColumn(data, offset)
	return fmt.Errorf("invalid JSON at byte offset %d (line %d, column %d): %w; fix or remove the file", offset, line, col, err)
}

func lineColumn(data []byte, offset int64) (line, col int) {
	offset = min(offset, int64(len(data)))
	line = 1 + bytes.Count(data[:offset], []byte("\n"))
	col = int(offset) - (bytes.LastIndexByte(data[:offset], '\n') + 1) + 1
	return line, col
}
