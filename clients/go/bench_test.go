// Ask round trips against the Rust cart_node, beside a raw nats.go
// request of the same size to a trivial responder in this process, on the
// same nats-server in the same run (the baseline: what NATS alone costs).
package troupe

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func BenchmarkRoundTrip(b *testing.B) {
	s := theShopFor(b)
	getT := msgType(b, s, "shop.cart.Get")
	c := connect(b, s, "go-bench", e2eSecret)
	addT := msgType(b, s, "shop.cart.Add")
	if err := c.Tell("shop", "cart", addT, add{"bench", "tea", 1}); err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(s.url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	reply := []byte("raw reply of about the cart's size, 64 bytes...........")
	sub, err := nc.Subscribe("bench.echo", func(m *nats.Msg) { m.Respond(reply) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	req := make([]byte, 32+64+14) // an ask frame, its seal and body, roughly
	b.Run("ask_cart_node", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var lines []line
			err := c.Ask(ctx, "shop", "cart", getT, get{"bench"}, &lines)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw_nats_request", func(b *testing.B) {
		for b.Loop() {
			if _, err := nc.Request("bench.echo", req, 10*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
}
