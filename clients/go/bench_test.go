// Ask round trips and tell throughput against the Rust cart_node, beside
// raw nats.go on the same nats-server in the same run (the baseline: what
// NATS alone costs), as issue 42 asks: ask p50/p99 against a raw
// request/reply with the same payload sizes, tell throughput against raw
// publish. The rounds alternate (A/B) so that the machine's drift hits
// both sides alike; the figures are reported as b.ReportMetric values.
//
// Three round trips:
//
//   - ask: Client.Ask of shop.cart.Get to the cart actor (CBOR, sealed);
//
//   - ping: a sealed ping frame to the same node, which its inbox loop
//     answers without an actor (the Rust node's transport cost alone);
//
//   - raw: nc.Request of the same request bytes to a responder in this
//     process answering with the same reply bytes (NATS alone);
//
//   - rawnode: nc.Request of the ask's own sealed bytes, built once, to
//     the node (the same answer as ask: what the client itself adds).
//
//     TROUPE_CART_NODE=../../target/release/examples/cart_node \
//     go test -run XXX -bench . -benchtime 1x
package troupe

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func percentile(d []time.Duration, p float64) float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(p*float64(len(s)-1))].Microseconds())
}

func BenchmarkRoundTrip(b *testing.B) {
	s := theShopFor(b)
	getT := msgType(b, s, "shop.cart.Get")
	c := connect(b, s, "go-bench", e2eSecret)
	addT := msgType(b, s, "shop.cart.Add")
	for i := 0; i < 3; i++ {
		if err := c.Tell("shop", "cart", addT, add{"bench", "tea", 1}); err != nil {
			b.Fatal(err)
		}
	}
	nc, err := nats.Connect(s.url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	// The same bytes as the ask: its sealed request and its reply.
	body, _ := EncodeCBOR(get{"bench"})
	req := Seal([]byte(e2eSecret), c.Subject("shop"), AppendFrame(nil, KindAsk, 0, FlagCBOR, getT.TypeID(), TypeID("cart"), getT.AskFingerprint, body))
	lines, _ := EncodeCBOR([]line{{"tea", 3}})
	reply := AppendFrame(nil, KindReply, 0, FlagCBOR, getT.TypeID(), TypeID("cart"), getT.AskFingerprint, lines)
	sub, err := nc.Subscribe("bench.echo", func(m *nats.Msg) { m.Respond(reply) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	ping := Seal([]byte(e2eSecret), c.Subject("shop"), AppendFrame(nil, KindPing, 0, 0, 0, 0, 0, nil))
	const rounds, per = 10, 300
	var ask, pong, raw, rawNode []time.Duration
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			for i := 0; i < per; i++ {
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				var got []line
				err := c.Ask(ctx, "shop", "cart", getT, get{"bench"}, &got)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				ask = append(ask, time.Since(t0))
			}
			for i := 0; i < per; i++ {
				t0 := time.Now()
				if _, err := nc.Request(c.Subject("shop"), ping, 10*time.Second); err != nil {
					b.Fatal(err)
				}
				pong = append(pong, time.Since(t0))
			}
			for i := 0; i < per; i++ {
				t0 := time.Now()
				if _, err := nc.Request("bench.echo", req, 10*time.Second); err != nil {
					b.Fatal(err)
				}
				raw = append(raw, time.Since(t0))
			}
			for i := 0; i < per; i++ {
				t0 := time.Now()
				if _, err := nc.Request(c.Subject("shop"), req, 10*time.Second); err != nil {
					b.Fatal(err)
				}
				rawNode = append(rawNode, time.Since(t0))
			}
		}
	}
	b.ReportMetric(percentile(ask, 0.5), "ask_p50_us")
	b.ReportMetric(percentile(ask, 0.99), "ask_p99_us")
	b.ReportMetric(percentile(pong, 0.5), "ping_p50_us")
	b.ReportMetric(percentile(pong, 0.99), "ping_p99_us")
	b.ReportMetric(percentile(raw, 0.5), "raw_p50_us")
	b.ReportMetric(percentile(raw, 0.99), "raw_p99_us")
	b.ReportMetric(percentile(rawNode, 0.5), "rawnode_p50_us")
	b.ReportMetric(percentile(ask, 0.5)/percentile(raw, 0.5), "ask/raw_p50")
	b.ReportMetric(percentile(ask, 0.5)/percentile(rawNode, 0.5), "ask/rawnode_p50")
	b.ReportMetric(percentile(ask, 0.5)/percentile(pong, 0.5), "ask/ping_p50")
}

// BenchmarkClientAsk is the client's own work per ask, without the
// network: encode, frame, seal, and read a reply (what pprof shows of Ask).
func BenchmarkClientAsk(b *testing.B) {
	c, _ := newClient(Options{Name: "b", Secret: []byte(e2eSecret)})
	getT := MessageType{Name: "shop.cart.Get", AskFingerprint: 7}
	lines, _ := EncodeCBOR([]line{{"tea", 3}})
	reply := AppendFrame(nil, KindReply, 0, FlagCBOR, getT.TypeID(), TypeID("cart"), 7, lines)
	b.ReportAllocs()
	for b.Loop() {
		body, _ := EncodeCBOR(get{"bench"})
		req := AppendFrame(nil, KindAsk, 0, FlagCBOR, getT.TypeID(), TypeID("cart"), 7, body)
		_ = c.sealed("troupe.default.node.shop", req)
		var got []line
		if err := c.ReadReply(reply, 7, &got); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTell is tell throughput: Client.Tell of shop.cart.Add beside
// raw nc.Publish of the same bytes to a subject nobody reads, alternating.
func BenchmarkTell(b *testing.B) {
	s := theShopFor(b)
	addT := msgType(b, s, "shop.cart.Add")
	c := connect(b, s, "go-bench-tell", e2eSecret)
	nc, err := nats.Connect(s.url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	body, _ := EncodeCBOR(add{"bench", "tea", 1})
	msg := Seal([]byte(e2eSecret), c.Subject("shop"), AppendFrame(AppendLink(nil, 1, 1, c.Name), KindTell, 0, FlagCBOR, addT.TypeID(), TypeID("cart"), addT.TellFingerprint, body))
	const rounds, per = 5, 20000
	var tellT, rawT time.Duration
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			t0 := time.Now()
			for i := 0; i < per; i++ {
				if err := c.Tell("shop", "cart", addT, add{"bench", "tea", 1}); err != nil {
					b.Fatal(err)
				}
			}
			c.Flush()
			tellT += time.Since(t0)
			t0 = time.Now()
			for i := 0; i < per; i++ {
				if err := nc.Publish("bench.sink", msg); err != nil {
					b.Fatal(err)
				}
			}
			nc.Flush()
			rawT += time.Since(t0)
		}
	}
	n := float64(rounds * per)
	b.ReportMetric(n/tellT.Seconds(), "tells/s")
	b.ReportMetric(n/rawT.Seconds(), "raw_publish/s")
	b.ReportMetric(rawT.Seconds()/tellT.Seconds(), "tell/raw")
}
