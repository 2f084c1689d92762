package testgo

import (
	"reflect"
	"strings"
)

// JSONNames returns the JSON names of the fields of the struct v (or of the
// struct v points to), with the fields of those tagged ",inline" (a struct
// or a pointer to one) in the outer object, as the report structs of package
// tracer put them. Tests use it to check that a reader of reports spells the
// names the tracer writes.
func JSONNames(v any) map[string]bool {
	names := map[string]bool{}
	addJSONNames(names, reflect.TypeOf(v))
	return names
}

func addJSONNames(names map[string]bool, t reflect.Type) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
		case opts == "inline" || f.Anonymous && name == "":
			addJSONNames(names, f.Type)
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
}
