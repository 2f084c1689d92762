package gjsonq

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// doc is a 100 KB document: an envelope with a page of 400 orders, each
// with a customer, an address and a few items.
var doc = func() string {
	var b strings.Builder
	b.WriteString(`{"meta":{"request":"7f3a","page":{"size":400,"next":"c2Vjb25k"}},"orders":[`)
	for i := range 400 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"status":%q,"customer":{"name":"Customer %d","email":"c%d@example.com","tier":%q},`+
			`"address":{"city":"City %d","zip":"%05d"},"items":[{"sku":"A-%d","qty":%d,"price":%d.5},{"sku":"B-%d","qty":1,"price":%d.25}],"total":%d.75}`,
			i, []string{"new", "paid", "shipped"}[i%3], i, i, []string{"gold", "silver"}[i%2], i%97, i*7%100000, i, i%5+1, i%50, i, i%30, i%400)
	}
	b.WriteString(`],"links":{"self":"/orders?page=1","next":"/orders?page=2"}}`)
	return b.String()
}()

var sink int

// BenchmarkGetMeta reads fields before the large array.
func BenchmarkGetMeta(b *testing.B) {
	for b.Loop() {
		sink += len(gjson.Get(doc, "meta.request").Str) + int(gjson.Get(doc, "meta.page.size").Int())
	}
}

// BenchmarkGetAfter reads a field after the array: the whole document is
// skipped over.
func BenchmarkGetAfter(b *testing.B) {
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		sink += len(gjson.Get(doc, "links.next").Str)
	}
}

// BenchmarkGetIndex reads fields of an order deep in the array.
func BenchmarkGetIndex(b *testing.B) {
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		sink += len(gjson.Get(doc, "orders.350.customer.email").Str) + int(gjson.Get(doc, "orders.350.items.1.qty").Int())
	}
}

// BenchmarkGetMany reads several paths in one pass.
func BenchmarkGetMany(b *testing.B) {
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		for _, r := range gjson.GetMany(doc, "meta.request", "orders.10.status", "orders.200.address.zip", "links.self") {
			sink += len(r.Raw)
		}
	}
}

// BenchmarkQuery counts orders matching a condition.
func BenchmarkQuery(b *testing.B) {
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		sink += len(gjson.Get(doc, `orders.#(status=="shipped")#.id`).Array())
	}
}

// BenchmarkForEach walks every order and reads two fields of each.
func BenchmarkForEach(b *testing.B) {
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		gjson.Get(doc, "orders").ForEach(func(_, v gjson.Result) bool {
			sink += int(v.Get("id").Int()) + len(v.Get("customer.tier").Str)
			return true
		})
	}
}

// BenchmarkParseBytes parses the document and reads from the result.
func BenchmarkParseBytes(b *testing.B) {
	bs := []byte(doc)
	b.SetBytes(int64(len(bs)))
	for b.Loop() {
		sink += int(gjson.GetBytes(bs, "orders.399.total").Float())
	}
}

func TestDocSize(t *testing.T) {
	if n := len(doc); n < 90_000 || n > 130_000 {
		t.Errorf("document of %d bytes, want about 100 KB", n)
	}
	if !gjson.Valid(doc) {
		t.Fatal("document is not valid JSON")
	}
	if got := gjson.Get(doc, "orders.350.customer.email").Str; got != "c350@example.com" {
		t.Errorf("orders.350.customer.email = %q", got)
	}
}
