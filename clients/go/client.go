// The client: a NATS connection that speaks to Troupe nodes, as the
// Python client's client.py.
//
// It keeps the rules of docs/protocol.md, "What a client must do": one
// epoch per connection; tells numbered per receiving node from 1 behind a
// link frame (the numbering and the publish happen under one lock, so a
// node sees them in order); asks as NATS requests of exactly one frame; a
// seal on every message when the cluster has a key; a deadline on every
// ask; and whatever it reads off the network decoded defensively: a bad
// frame is counted in Stats and logged at a limited rate, never a panic.
package troupe

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultMaxBody is the largest body read (NATS's default max payload).
const DefaultMaxBody = 1 << 20

// DefaultAskTimeout bounds an ask whose context has no deadline.
const DefaultAskTimeout = 5 * time.Second

// Options of Connect. Give the cluster's Secret (every message is then
// sealed) or Insecure, never both.
type Options struct {
	Name     string // this client's node name (a token)
	Cluster  string // the namespace; "default" if empty
	Secret   []byte
	Insecure bool
	// NATS authentication: a .creds file, a user and password, or a token.
	Credentials, User, Password, Token string
	TLS                                *tls.Config // for tls:// URLs
	MaxBody                            uint32      // DefaultMaxBody if 0
	NATS                               []nats.Option
}

// Stats is what a client sent and what it refused (ClientStats in Python).
type Stats struct {
	TellsSent, AsksSent, AcksReceived uint64
	BadFrames                         uint64 // refused frames on the inbox
	Unauthenticated                   uint64 // inbox messages without a good seal
	BadReplies                        uint64 // replies that were not one reply frame echoing the correlation
	Acked                             map[string]AckState
}

// AckState is the last ack of one receiving node.
type AckState struct{ Upto, Received, Dropped uint64 }

// Client calls Troupe actors over NATS. Its methods are safe for
// concurrent use.
type Client struct {
	nc      *nats.Conn
	sub     *nats.Subscription
	Name    string
	Cluster string
	Epoch   uint64
	key     []byte
	maxBody uint32

	macs sync.Pool // keyed HMAC-SHA256 states for seals (hash.Hash)

	mu   sync.Mutex // tell numbering and publish order
	next map[string]uint64
	// The tell's frames and its sealed message, reused under mu (nats.go
	// copies a published message into its own buffer before Publish
	// returns); tmac is the keyed HMAC of tells, also under mu.
	tframes, tsealed []byte
	tmac             hash.Hash

	tells, asks, acks, bad, unauth, badReplies atomic.Uint64
	ackMu                                      sync.Mutex
	acked                                      map[string]AckState
	lastLog                                    atomic.Int64
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func newClient(o Options) (*Client, error) {
	if (o.Secret == nil) == !o.Insecure {
		return nil, errors.New("troupe: give the cluster's secret, or Insecure (not both)")
	}
	if o.Cluster == "" {
		o.Cluster = "default"
	}
	for _, p := range [][2]string{{"cluster", o.Cluster}, {"name", o.Name}} {
		if !isToken(p[1]) {
			return nil, fmt.Errorf("troupe: %s %q is not a token (ASCII letters, digits, _ and -)", p[0], p[1])
		}
	}
	if o.MaxBody == 0 {
		o.MaxBody = DefaultMaxBody
	}
	var e [8]byte
	if _, err := rand.Read(e[:]); err != nil {
		return nil, err
	}
	return &Client{Name: o.Name, Cluster: o.Cluster, Epoch: binary.LittleEndian.Uint64(e[:]),
		key: o.Secret, maxBody: o.MaxBody, next: map[string]uint64{}, acked: map[string]AckState{}}, nil
}

// Connect connects to url as node o.Name of cluster o.Cluster and listens
// on its inbox for acks.
func Connect(url string, o Options) (*Client, error) {
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name("troupe-client-" + c.Name)}
	if o.Credentials != "" {
		opts = append(opts, nats.UserCredentials(o.Credentials))
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLS != nil {
		opts = append(opts, nats.Secure(o.TLS))
	}
	nc, err := nats.Connect(url, append(opts, o.NATS...)...)
	if err != nil {
		return nil, &DisconnectedError{err.Error()}
	}
	c.nc = nc
	if c.sub, err = nc.Subscribe(c.Subject(c.Name), func(m *nats.Msg) { c.OnInbox(m.Subject, m.Data) }); err != nil {
		nc.Close()
		return nil, &DisconnectedError{err.Error()}
	}
	return c, nil
}

// Subject is the inbox subject of node.
func (c *Client) Subject(node string) string { return "troupe." + c.Cluster + ".node." + node }

// Close drains the connection and waits until it is closed (bounded by
// nats.go's drain timeout, 30 s by default): every tell published before
// is on the server when it returns. (nats.go's Drain alone returns at
// once; a process that exits right after it loses the tells still in its
// buffer.)
func (c *Client) Close() error {
	if err := c.nc.Drain(); err != nil {
		return err
	}
	for deadline := time.Now().Add(35 * time.Second); !c.nc.IsClosed(); {
		if time.Now().After(deadline) {
			c.nc.Close()
			return &DisconnectedError{"the drain did not finish"}
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Flush waits until the server has every message published so far.
func (c *Client) Flush() error { return c.nc.Flush() }

// Stats is a snapshot of the counters.
func (c *Client) Stats() Stats {
	c.ackMu.Lock()
	acked := make(map[string]AckState, len(c.acked))
	for k, v := range c.acked {
		acked[k] = v
	}
	c.ackMu.Unlock()
	return Stats{c.tells.Load(), c.asks.Load(), c.acks.Load(), c.bad.Load(), c.unauth.Load(), c.badReplies.Load(), acked}
}

func (c *Client) sealed(subject string, frames []byte) []byte {
	if c.key == nil {
		return frames
	}
	// A keyed HMAC per concurrent sender, kept: hmac.New hashes the key
	// pads each time (two SHA-256 blocks and three allocations per seal).
	m, _ := c.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, c.key)
	}
	out := sealWith(m, subject, frames)
	c.macs.Put(m)
	return out
}

// Tell sends v (CBOR) to actor on node; fire and forget. The node's acks,
// read on this client's inbox, say how many it delivered (Stats).
func (c *Client) Tell(node, actor string, mt MessageType, v any) error {
	body, err := EncodeCBOR(v)
	if err != nil {
		return err
	}
	if uint64(len(body)) > uint64(c.maxBody) {
		return fmt.Errorf("troupe: a body of %d bytes is above MaxBody", len(body))
	}
	if !c.nc.IsConnected() {
		return &DisconnectedError{"not connected"}
	}
	subject := c.Subject(node)
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := c.next[node]
	if seq == 0 {
		seq = 1
	}
	frames := AppendLink(c.tframes[:0], c.Epoch, seq, c.Name)
	frames = AppendFrame(frames, KindTell, 0, FlagCBOR, mt.TypeID(), TypeID(actor), mt.TellFingerprint, body)
	c.tframes = frames
	msg := frames
	if c.key != nil {
		if c.tmac == nil {
			c.tmac = hmac.New(sha256.New, c.key)
		}
		c.tsealed = sealInto(c.tsealed, c.tmac, subject, frames)
		msg = c.tsealed
	}
	if err := c.nc.Publish(subject, msg); err != nil {
		return &DisconnectedError{err.Error()}
	}
	c.next[node] = seq + 1
	c.tells.Add(1)
	return nil
}

// Ask asks actor on node and decodes the CBOR reply into reply (a
// pointer, or nil to drop it). The ask ends at ctx's deadline, or after
// DefaultAskTimeout if it has none. Errors: *TimeoutError (it may have
// run), *NoRespondersError (no such node), *UnknownTargetError,
// *SchemaMismatchError, *BadFrameError (also a wrong cluster key), the
// other status errors, *DisconnectedError, and ctx.Err() if ctx is canceled.
func (c *Client) Ask(ctx context.Context, node, actor string, mt MessageType, v, reply any) error {
	body, err := EncodeCBOR(v)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultAskTimeout)
		defer cancel()
	}
	subject := c.Subject(node)
	corr := mt.AskFingerprint
	req := AppendFrame(nil, KindAsk, 0, FlagCBOR, mt.TypeID(), TypeID(actor), corr, body)
	if !c.nc.IsConnected() {
		return &DisconnectedError{"not connected"}
	}
	c.asks.Add(1)
	msg, err := c.nc.RequestWithContext(ctx, subject, c.sealed(subject, req))
	switch {
	case err == nil:
	case errors.Is(err, nats.ErrNoResponders):
		return &NoRespondersError{fmt.Sprintf("no node %q in cluster %q", node, c.Cluster)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return &TimeoutError{"no reply before the deadline"}
	case errors.Is(err, context.Canceled):
		return err
	default:
		return &DisconnectedError{err.Error()}
	}
	if err := c.ReadReply(msg.Data, corr, reply); err != nil {
		var pe *ProtocolError
		if errors.As(err, &pe) {
			c.badReplies.Add(1)
			c.logBad("a bad reply", err)
			return &NoReplyError{fmt.Sprintf("the reply could not be read (%v)", err)}
		}
		return err
	}
	return nil
}

// ReadReply reads a reply message: its value into reply, or its status
// as an error. It returns a *ProtocolError for a payload that is not
// exactly one reply frame echoing correlation (Ask counts it).
func (c *Client) ReadReply(payload []byte, correlation uint64, reply any) error {
	frames, err := DecodeFrames(payload, c.maxBody)
	if err != nil {
		return err
	}
	if len(frames) != 1 || frames[0].Kind != KindReply {
		return &ProtocolError{"not_one_frame", ""}
	}
	f := frames[0]
	// A node that could not read the request (or found no good seal on
	// it) answers BadFrame with every id 0: it never read the correlation.
	if f.Corr != correlation && !(f.Status == 7 && f.Corr == 0) {
		return &ProtocolError{"correlation", fmt.Sprintf("%#016x, asked %#016x", f.Corr, correlation)}
	}
	switch f.Status {
	case 0:
		if f.Flags&FlagCBOR == 0 {
			return &ProtocolError{"undecodable", "a postcard reply to a CBOR ask"}
		}
		if reply == nil {
			var drop any
			return DecodeCBOR(f.Body, &drop)
		}
		return DecodeCBOR(f.Body, reply)
	case 8:
		var theirs []any
		if f.Flags&FlagCBOR == 0 || DecodeCBOR(f.Body, &theirs) != nil || len(theirs) != 2 {
			return &SchemaMismatchError{"?", 0}
		}
		name, ok1 := theirs[0].(string)
		fp, ok2 := theirs[1].(uint64)
		if !ok1 || !ok2 {
			return &SchemaMismatchError{"?", 0}
		}
		return &SchemaMismatchError{name, fp}
	default:
		return statusError(f.Status)
	}
}

func (c *Client) logBad(what string, err error) {
	now := time.Now().UnixNano()
	last := c.lastLog.Load()
	if now-last >= int64(time.Second) && c.lastLog.CompareAndSwap(last, now) {
		log.Printf("troupe client %s: %s refused: %v", c.Name, what, err)
	}
}

// OnInbox reads one message of this client's inbox: acks of its own
// epoch are kept, the rest ignored, anything malformed counted. It never
// panics and never returns an error.
func (c *Client) OnInbox(subject string, payload []byte) {
	defer func() {
		if r := recover(); r != nil { // not expected: every length is checked
			c.bad.Add(1)
			c.logBad("a frame", fmt.Errorf("%v", r))
		}
	}()
	frames := payload
	if c.key != nil {
		var err error
		if frames, err = OpenSealed(c.key, subject, payload); err != nil {
			c.unauth.Add(1)
			c.logBad("an unsealed message", err)
			return
		}
	}
	fs, err := DecodeFrames(frames, c.maxBody)
	if err != nil {
		c.bad.Add(1)
		c.logBad("a bad frame", err)
		return
	}
	for _, f := range fs {
		if f.Kind != KindAck || f.TypeID != c.Epoch {
			continue
		}
		a, err := DecodeAck(f)
		if err != nil {
			c.bad.Add(1)
			c.logBad("a bad ack", err)
			return
		}
		c.acks.Add(1)
		c.ackMu.Lock()
		if len(c.acked) < 4096 || c.hasAcked(a.Receiver) { // bounded state
			c.acked[a.Receiver] = AckState{a.Upto, a.Received, a.Dropped}
		}
		c.ackMu.Unlock()
	}
}

func (c *Client) hasAcked(r string) bool { _, ok := c.acked[r]; return ok }
