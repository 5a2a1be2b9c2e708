// Troupe's reply statuses as typed errors, as the Python client's
// errors.py: one type per status, each matched by errors.As on its
// pointer type and by errors.Is on its sentinel (ErrUnknownTarget, ...)
// and on its parents' (ErrNoResponders for UnknownTarget, UnknownType and
// SchemaMismatch; ErrTroupe for all). MayHaveRun says whether the actor
// may have run the request (false: safe to retry).
package troupe

import (
	"context"
	"errors"
	"fmt"
)

// Sentinels for errors.Is.
var (
	ErrTroupe         = errors.New("troupe")
	ErrProtocol       = errors.New("troupe: protocol error")
	ErrNoResponders   = errors.New("troupe: no responders")
	ErrUnknownTarget  = errors.New("troupe: unknown target")
	ErrUnknownType    = errors.New("troupe: unknown type")
	ErrActorStopped   = errors.New("troupe: actor stopped")
	ErrMailboxFull    = errors.New("troupe: mailbox full")
	ErrNoReply        = errors.New("troupe: no reply")
	ErrTimeout        = errors.New("troupe: timeout")
	ErrBadFrame       = errors.New("troupe: bad frame")
	ErrSchemaMismatch = errors.New("troupe: schema mismatch")
	ErrDisconnected   = errors.New("troupe: disconnected")
)

// Error is what every error of a Troupe outcome implements.
type Error interface {
	error
	// MayHaveRun: the actor may have run the request (not safe to retry blindly).
	MayHaveRun() bool
}

func is(t error, own ...error) bool {
	if t == ErrTroupe {
		return true
	}
	for _, o := range own {
		if t == o {
			return true
		}
	}
	return false
}

func msg(kind, detail string) string {
	if detail == "" {
		return kind
	}
	return kind + ": " + detail
}

// Is: ErrProtocol and ErrTroupe.
func (e *ProtocolError) Is(t error) bool { return is(t, ErrProtocol) }

// MayHaveRun is false: nothing was delivered.
func (e *ProtocolError) MayHaveRun() bool { return false }

// NoRespondersError: no node serves that subject.
type NoRespondersError struct{ Detail string }

func (e *NoRespondersError) Error() string    { return msg("no responders", e.Detail) }
func (e *NoRespondersError) Is(t error) bool  { return is(t, ErrNoResponders) }
func (e *NoRespondersError) MayHaveRun() bool { return false }

// UnknownTargetError is status 1: no actor is exposed under that name.
type UnknownTargetError struct{ Detail string }

func (e *UnknownTargetError) Error() string    { return msg("unknown target", e.Detail) }
func (e *UnknownTargetError) Is(t error) bool  { return is(t, ErrUnknownTarget, ErrNoResponders) }
func (e *UnknownTargetError) MayHaveRun() bool { return false }

// UnknownTypeError is status 2: the actor does not take this type as an ask (or not in CBOR).
type UnknownTypeError struct{ Detail string }

func (e *UnknownTypeError) Error() string    { return msg("unknown type", e.Detail) }
func (e *UnknownTypeError) Is(t error) bool  { return is(t, ErrUnknownType, ErrNoResponders) }
func (e *UnknownTypeError) MayHaveRun() bool { return false }

// ActorStoppedError is status 3, or the shard gateway's ActorStopped.
// Entity is set for the gateway's: an entity that stopped may have
// stopped after handling the ask, so it may have run.
type ActorStoppedError struct {
	Detail string
	Entity bool
}

func (e *ActorStoppedError) Error() string    { return msg("actor stopped", e.Detail) }
func (e *ActorStoppedError) Is(t error) bool  { return is(t, ErrActorStopped) }
func (e *ActorStoppedError) MayHaveRun() bool { return e.Entity }

// MailboxFullError is status 4: the actor's bounded mailbox was full.
type MailboxFullError struct{ Detail string }

func (e *MailboxFullError) Error() string    { return msg("mailbox full", e.Detail) }
func (e *MailboxFullError) Is(t error) bool  { return is(t, ErrMailboxFull) }
func (e *MailboxFullError) MayHaveRun() bool { return false }

// NoReplyError is status 5 (the actor dropped the request), or a reply
// that could not be read.
type NoReplyError struct{ Detail string }

func (e *NoReplyError) Error() string    { return msg("no reply", e.Detail) }
func (e *NoReplyError) Is(t error) bool  { return is(t, ErrNoReply) }
func (e *NoReplyError) MayHaveRun() bool { return true }

// TimeoutError is status 6, or no reply before the ask's deadline; it
// also matches context.DeadlineExceeded.
type TimeoutError struct{ Detail string }

func (e *TimeoutError) Error() string { return msg("timeout", e.Detail) }
func (e *TimeoutError) Is(t error) bool {
	return is(t, ErrTimeout) || t == context.DeadlineExceeded
}
func (e *TimeoutError) MayHaveRun() bool { return true }

// BadFrameError is status 7: the node could not decode the request, or
// its seal was not good (a wrong cluster key).
type BadFrameError struct{ Detail string }

func (e *BadFrameError) Error() string    { return msg("bad frame", e.Detail) }
func (e *BadFrameError) Is(t error) bool  { return is(t, ErrBadFrame) }
func (e *BadFrameError) MayHaveRun() bool { return false }

// SchemaMismatchError is status 8: the node has another shape under this
// stable name; RustType and Fingerprint are the node's.
type SchemaMismatchError struct {
	RustType    string
	Fingerprint uint64
}

func (e *SchemaMismatchError) Error() string {
	return fmt.Sprintf("the node has another shape: %s (fingerprint %#016x)", e.RustType, e.Fingerprint)
}
func (e *SchemaMismatchError) Is(t error) bool  { return is(t, ErrSchemaMismatch, ErrNoResponders) }
func (e *SchemaMismatchError) MayHaveRun() bool { return false }

// DisconnectedError: the connection to the NATS server is down or closed.
type DisconnectedError struct{ Detail string }

func (e *DisconnectedError) Error() string    { return msg("disconnected", e.Detail) }
func (e *DisconnectedError) Is(t error) bool  { return is(t, ErrDisconnected) }
func (e *DisconnectedError) MayHaveRun() bool { return true }

// statusError is the error of a non-Ok status byte other than 8; an
// unknown byte reads as BadFrame.
func statusError(status uint8) error {
	d := fmt.Sprintf("status %d", status)
	switch status {
	case 1:
		return &UnknownTargetError{d}
	case 2:
		return &UnknownTypeError{d}
	case 3:
		return &ActorStoppedError{Detail: d}
	case 4:
		return &MailboxFullError{d}
	case 5:
		return &NoReplyError{d}
	case 6:
		return &TimeoutError{d}
	default:
		return &BadFrameError{d}
	}
}
