// Package gjsonq benchmarks github.com/tidwall/gjson the way a service
// reads a payload: field lookups by path over a 100 KB JSON document. The
// library's own benchmarks measure validation only.
package gjsonq
