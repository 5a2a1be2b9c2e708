// End to end, sharded entities: a real nats-server (JetStream on) and a
// Rust cluster of two nodes (troupe-sharding's cart_gateway example)
// serving the shop's carts, called by kind and id through either node's
// shard gateway, as the Python client's tests/test_entities.py. Skips with
// one line where nats-server or the node binary is missing. Every wait is
// bounded.
package troupe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	clusterOnce sync.Once
	clusterURL  string
	clusterSkip string
	clusterErr  error
)

func stopOnStdin(cmd *exec.Cmd, stdin io.Closer, stdout io.Reader) func() {
	return func() {
		stdin.Close() // a node leaves when its stdin closes
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, stdout); cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	}
}

// startCluster starts nats-server with JetStream on a free loopback port
// and two cart_gateway nodes, a and b, and waits for both "ready" lines
// (within 60 s).
func startCluster() (string, string, error) {
	server := natsServer()
	if server == "" {
		return "", "nats-server not found: skipping the entity end-to-end tests", nil
	}
	node := os.Getenv("TROUPE_CART_GATEWAY")
	if node == "" {
		node = "../../target/debug/examples/cart_gateway"
		if _, err := os.Stat(node); err != nil {
			return "", "no cart_gateway binary (cargo build -p troupe-sharding --example cart_gateway, or set TROUPE_CART_GATEWAY)", nil
		}
	}
	port, err := freePort()
	if err != nil {
		return "", "", err
	}
	store, err := os.MkdirTemp("", "troupe-go-entities-")
	if err != nil {
		return "", "", err
	}
	srv := exec.Command(server, "-js", "-sd", store, "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := srv.Start(); err != nil {
		return "", "", err
	}
	cleanup = append(cleanup, func() {
		srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			srv.Process.Kill()
		}
		os.RemoveAll(store)
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return "", "", errors.New("nats-server did not listen within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	url := "nats://" + addr
	ready := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		cmd := exec.Command(node, url, name, "2", e2eSecret)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return "", "", err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return "", "", err
		}
		if err := cmd.Start(); err != nil {
			return "", "", err
		}
		cleanup = append(cleanup, stopOnStdin(cmd, stdin, stdout))
		go func() {
			l, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || strings.TrimSpace(l) != "ready" {
				ready <- errors.New("cart_gateway " + name + " did not say ready: " + strconv.Quote(l))
				return
			}
			ready <- nil
		}()
	}
	timeout := time.After(60 * time.Second)
	for i := 0; i < 2; i++ {
		select {
		case err := <-ready:
			if err != nil {
				return "", "", err
			}
		case <-timeout:
			return "", "", errors.New("the cart_gateway nodes were not ready within 60 s")
		}
	}
	return url, "", nil
}

func theClusterFor(t testing.TB) string {
	t.Helper()
	clusterOnce.Do(func() { clusterURL, clusterSkip, clusterErr = startCluster() })
	if clusterSkip != "" {
		if strings.HasPrefix(clusterSkip, "nats-server") && os.Getenv("TROUPE_REQUIRE_NATS") == "1" {
			t.Fatal("nats-server is required (TROUPE_REQUIRE_NATS=1) and missing")
		}
		t.Skip(clusterSkip)
	}
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return clusterURL
}

type cartLine struct {
	Sku string `cbor:"sku"`
	Qty uint32 `cbor:"qty"`
}

func askEntity10(c *Client, node, id, msgType string, v, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.AskEntity(ctx, node, "cart", id, msgType, v, reply)
}

func TestE2EEntityTellThroughOneNodeReadThroughTheOther(t *testing.T) {
	url := theClusterFor(t)
	c, err := Connect(url, Options{Name: "go-entities", Secret: []byte(e2eSecret)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 8; i++ { // spread over the shards of both nodes
		id, via := "go-cart-"+strconv.Itoa(i), "ab"[i%2:i%2+1]
		for _, a := range []addItem{{"tea", 2}, {"milk", 1}, {"tea", 3}} {
			if err := c.TellEntity(via, "cart", id, "shop.cart.AddItem", a); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 8; i++ {
		id, other := "go-cart-"+strconv.Itoa(i), "ba"[i%2:i%2+1]
		var n uint64
		for deadline := time.Now().Add(20 * time.Second); n < 3 && time.Now().Before(deadline); {
			if err := askEntity10(c, other, id, "shop.cart.Count", nil, &n); err != nil {
				t.Fatal(err)
			}
			if n < 3 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		var lines []cartLine
		if err := askEntity10(c, other, id, "shop.cart.Lines", nil, &lines); err != nil {
			t.Fatal(err)
		}
		if n != 3 || len(lines) != 2 || lines[0] != (cartLine{"tea", 5}) || lines[1] != (cartLine{"milk", 1}) {
			t.Fatalf("%s: count %d, lines %v", id, n, lines)
		}
	}
	if s := c.Stats(); s.BadFrames != 0 || s.BadReplies != 0 || s.Unauthenticated != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestE2EEntityRefusalsAreTyped(t *testing.T) {
	url := theClusterFor(t)
	c, err := Connect(url, Options{Name: "go-entities-bad", Secret: []byte(e2eSecret)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var er *EntityRefusedError
	if err := c.AskEntity(ctx, "a", "no-such-kind", "c-1", "shop.cart.Lines", nil, nil); !errors.As(err, &er) || er.Reason != "UnknownKind" || er.MayHaveRun() {
		t.Fatalf("unknown kind: %v", err)
	}
	if err := askEntity10(c, "b", "c-1", "shop.cart.Nothing", nil, nil); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("unknown type: %v", err)
	}
	if err := askEntity10(c, "a", "", "shop.cart.Lines", nil, nil); !errors.As(err, &er) || er.Reason != "BadId" {
		t.Fatalf("bad id: %v", err)
	}
	if err := askEntity10(c, "a", "c-1", "shop.cart.Lines", map[string]any{"x": 1}, nil); err != nil {
		// A unit struct takes null; a map does not decode to it.
		if !errors.As(err, &er) || er.Reason != "Undecodable" {
			t.Fatalf("undecodable: %v", err)
		}
	} else {
		t.Fatal("a map decoded to a unit struct")
	}
	if err := askEntity10(c, "no-such-node", "c-1", "shop.cart.Lines", nil, nil); !errors.Is(err, ErrNoResponders) {
		t.Fatalf("no node: %v", err)
	}
}
