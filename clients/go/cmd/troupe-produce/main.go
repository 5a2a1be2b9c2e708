// Command troupe-produce tells n shop.cart.AddItem messages to one cart
// entity through a node's shard gateway, then prints "told n". The
// Python client's mixed-producers test runs it beside its own producer.
package main

import (
	"flag"
	"fmt"
	"os"

	troupe "github.com/troupe-rs/troupe/clients/go"
)

type addItem struct {
	Sku string `cbor:"sku"`
	Qty uint32 `cbor:"qty"`
}

func main() {
	url := flag.String("url", "nats://127.0.0.1:4222", "the NATS server")
	secret := flag.String("secret", "", "the cluster's secret (empty: insecure)")
	node := flag.String("node", "a", "the node whose gateway routes the tells")
	kind := flag.String("kind", "cart", "the sharding's kind")
	id := flag.String("id", "cart-1", "the entity's id")
	n := flag.Int("n", 1000, "how many tells")
	flag.Parse()
	o := troupe.Options{Name: fmt.Sprintf("go-produce-%d", os.Getpid())}
	if *secret == "" {
		o.Insecure = true
	} else {
		o.Secret = []byte(*secret)
	}
	c, err := troupe.Connect(*url, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := 0; i < *n; i++ {
		if err := c.TellEntity(*node, *kind, *id, "shop.cart.AddItem", addItem{fmt.Sprintf("go-%d", i%7), 1}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	// The drain flushes every tell to the server before it closes.
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("told", *n)
}
