// Package main is the fault suite's independent checker: it reads the
// history a run of crates/troupe-faults wrote and decides, with porcupine,
// whether it is linearizable for a register and a ledger; it also counts
// lost confirmed deposits, finds double activations and measures recovery.
//
// This file holds the two models. Each key is its own object (porcupine's
// Partition), starting at 0.
//
//   - register: write(v) sets the value (its reply echoes v); read returns
//     the value.
//   - ledger: deposit(a) adds a and returns the balance after it; read
//     returns the balance.
//
// An operation whose outcome is unknown (a timeout, a store error, a
// process killed before the reply) has Output.Unknown set: it took effect
// or it did not (both next states are possible: the models are
// nondeterministic), and nothing is checked of its reply.
package main

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Input is an operation's request.
type Input struct {
	Key string
	Op  string // "write", "read", "deposit"
	Arg uint64
}

// Output is an operation's reply.
type Output struct {
	Unknown bool
	Val     uint64
}

// partitionByKey splits a history into one history per key.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(Input).Key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func describe(input, output interface{}) string {
	in, out := input.(Input), output.(Output)
	res := fmt.Sprint(out.Val)
	if out.Unknown {
		res = "?"
	}
	switch in.Op {
	case "read":
		return fmt.Sprintf("%s read -> %s", in.Key, res)
	default:
		return fmt.Sprintf("%s %s(%d) -> %s", in.Key, in.Op, in.Arg, res)
	}
}

// RegisterModel is a read/write register per key.
var RegisterModel = toModel(porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{uint64(0)} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(uint64), input.(Input), output.(Output)
		switch {
		case in.Op == "write" && out.Unknown:
			return []interface{}{s, in.Arg}
		case in.Op == "write" && out.Val == in.Arg:
			return []interface{}{in.Arg}
		case in.Op == "read" && (out.Unknown || out.Val == s):
			return []interface{}{s}
		}
		return nil
	},
	DescribeOperation: describe,
	DescribeState:     func(s interface{}) string { return fmt.Sprint(s) },
})

// LedgerModel is a balance per key that deposits add to.
var LedgerModel = toModel(porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{uint64(0)} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(uint64), input.(Input), output.(Output)
		switch {
		case in.Op == "deposit" && out.Unknown:
			return []interface{}{s, s + in.Arg}
		case in.Op == "deposit" && out.Val == s+in.Arg:
			return []interface{}{s + in.Arg}
		case in.Op == "read" && (out.Unknown || out.Val == s):
			return []interface{}{s}
		}
		return nil
	},
	DescribeOperation: describe,
	DescribeState:     func(s interface{}) string { return fmt.Sprint(s) },
})

func toModel(m porcupine.NondeterministicModel) porcupine.Model { return m.ToModel() }
