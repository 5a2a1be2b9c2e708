// End to end: a real nats-server and a real Rust node (the cart_node
// example of troupe-remote), driven by this client, as the Python
// client's tests/test_e2e.py. Skips with one line where nats-server or the
// node binary is missing (TROUPE_REQUIRE_NATS=1 makes a missing
// nats-server a failure, as in CI). Every wait is bounded.
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

const e2eSecret = "e2e-secret"

type shop struct {
	url    string
	schema *Schema
}

var (
	shopOnce sync.Once
	theShop  *shop
	shopSkip string
	shopErr  error
	cleanup  []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(cleanup) - 1; i >= 0; i-- {
		cleanup[i]()
	}
	os.Exit(code)
}

func natsServer() string {
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	return ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startShop starts nats-server on a free loopback port and cart_node on
// it as node "shop" with the shared secret; it reads the node's schema
// line and its "ready" line (within 60 s).
func startShop() (*shop, string, error) {
	server := natsServer()
	if server == "" {
		return nil, "nats-server not found: skipping the end-to-end tests", nil
	}
	node := os.Getenv("TROUPE_CART_NODE")
	if node == "" {
		node = "../../target/debug/examples/cart_node"
		if _, err := os.Stat(node); err != nil {
			return nil, "no cart_node binary (cargo build -p troupe-remote --example cart_node, or set TROUPE_CART_NODE)", nil
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	srv := exec.Command(server, "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := srv.Start(); err != nil {
		return nil, "", err
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
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return nil, "", errors.New("nats-server did not listen within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	url := "nats://" + addr
	cmd := exec.Command(node, url, "shop", e2eSecret)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	cleanup = append(cleanup, func() {
		stdin.Close() // the node stops when its stdin closes
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, stdout); cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	lines := make(chan string, 2)
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for i := 0; i < 2; i++ {
			l, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSpace(l)
		}
	}()
	var got []string
	timeout := time.After(60 * time.Second)
	for len(got) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				return nil, "", errors.New("cart_node exited before it was ready")
			}
			got = append(got, l)
		case <-timeout:
			return nil, "", errors.New("cart_node not ready within 60 s")
		}
	}
	if got[1] != "ready" {
		return nil, "", errors.New("cart_node's second line is " + strconv.Quote(got[1]))
	}
	schema, err := ParseSchema([]byte(got[0]))
	if err != nil {
		return nil, "", err
	}
	return &shop{url, schema}, "", nil
}

func theShopFor(t testing.TB) *shop {
	t.Helper()
	shopOnce.Do(func() { theShop, shopSkip, shopErr = startShop() })
	if shopSkip != "" {
		if strings.HasPrefix(shopSkip, "nats-server") && os.Getenv("TROUPE_REQUIRE_NATS") == "1" {
			t.Fatal("nats-server is required (TROUPE_REQUIRE_NATS=1) and missing")
		}
		t.Skip(shopSkip)
	}
	if shopErr != nil {
		t.Fatal(shopErr)
	}
	return theShop
}

func connect(t testing.TB, s *shop, name, secret string) *Client {
	t.Helper()
	c, err := Connect(s.url, Options{Name: name, Secret: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func msgType(t testing.TB, s *shop, name string) MessageType {
	t.Helper()
	m, err := s.schema.Message("cart", name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ask10(c *Client, node, actor string, mt MessageType, v, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Ask(ctx, node, actor, mt, v, reply)
}

func TestE2EAddItemsThenReadTheCart(t *testing.T) {
	s := theShopFor(t)
	addT, getT := msgType(t, s, "shop.cart.Add"), msgType(t, s, "shop.cart.Get")
	if p, ok := s.schema.Portable("cart", "shop.cart.Add"); !p || !ok {
		t.Fatal("shop.cart.Add is not portable")
	}
	c := connect(t, s, "go-e2e", e2eSecret)
	for _, q := range []uint32{1, 2, 3} {
		if err := c.Tell("shop", "cart", addT, add{"c-1", "tea", q}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Tell("shop", "cart", addT, add{"c-1", "milk", 1}); err != nil {
		t.Fatal(err)
	}
	// Tells and asks travel on different paths: wait for the lines.
	var lines []line
	for deadline := time.Now().Add(20 * time.Second); ; {
		lines = nil
		if err := ask10(c, "shop", "cart", getT, get{"c-1"}, &lines); err != nil {
			t.Fatal(err)
		}
		sum := uint32(0)
		for _, l := range lines {
			sum += l.Qty
		}
		if sum == 7 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(lines) != 2 || lines[0] != (line{"tea", 6}) || lines[1] != (line{"milk", 1}) {
		t.Fatalf("lines %+v", lines)
	}
	var none []line
	if err := ask10(c, "shop", "cart", getT, get{"nobody"}, &none); err != nil || len(none) != 0 {
		t.Fatalf("nobody's cart: %v %+v", err, none)
	}
	// The node acks the link: wait (bounded) for the ack of all 4 tells.
	for deadline := time.Now().Add(20 * time.Second); c.Stats().Acked["shop"].Upto < 4 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	st := c.Stats()
	if st.TellsSent != 4 || st.AsksSent < 2 || st.BadFrames != 0 || st.Unauthenticated != 0 || st.BadReplies != 0 {
		t.Fatalf("stats %+v", st)
	}
	if a := st.Acked["shop"]; st.AcksReceived == 0 || a.Upto != 4 || a.Dropped != 0 {
		t.Fatalf("acks %+v", st)
	}
}

func TestE2EUnknownActorAndUnknownNodeAreNoResponders(t *testing.T) {
	s := theShopFor(t)
	getT := msgType(t, s, "shop.cart.Get")
	c := connect(t, s, "go-e2e-2", e2eSecret)
	err := ask10(c, "shop", "no-such-actor", getT, get{"c-1"}, nil)
	var ut *UnknownTargetError
	if !errors.As(err, &ut) || !errors.Is(err, ErrNoResponders) {
		t.Fatalf("unknown actor: %v", err)
	}
	err = ask10(c, "no-such-node", "cart", getT, get{"c-1"}, nil)
	var nr *NoRespondersError
	if !errors.As(err, &nr) || !errors.Is(err, ErrNoResponders) {
		t.Fatalf("unknown node: %v", err)
	}
}

func TestE2EAWrongShapeIsASchemaMismatch(t *testing.T) {
	s := theShopFor(t)
	right := msgType(t, s, "shop.cart.Get")
	// The shape an outdated client believes in: {cart: u64}.
	wrong := MessageType{Name: "shop.cart.Get", AskFingerprint: FingerprintOfShape("struct{cart:u64}")}
	c := connect(t, s, "go-e2e-3", e2eSecret)
	err := ask10(c, "shop", "cart", wrong, map[string]uint64{"cart": 7}, nil)
	var sm *SchemaMismatchError
	if !errors.As(err, &sm) || sm.Fingerprint != right.AskFingerprint {
		t.Fatalf("%v", err)
	}
}

func TestE2EAWrongKeyIsRefused(t *testing.T) {
	s := theShopFor(t)
	getT := msgType(t, s, "shop.cart.Get")
	c := connect(t, s, "go-e2e-4", "not-the-secret")
	if err := ask10(c, "shop", "cart", getT, get{"c-1"}, nil); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("%v", err)
	}
}

func TestE2EAnAskPastItsDeadlineIsATimeout(t *testing.T) {
	s := theShopFor(t)
	getT := msgType(t, s, "shop.cart.Get")
	c := connect(t, s, "go-e2e-5", e2eSecret)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	err := c.Ask(ctx, "shop", "cart", getT, get{"c-1"}, nil)
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
}
