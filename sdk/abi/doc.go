// Package abi is Drover's plugin ABI, version 1: the messages that travel
// between the host and a scheduler plugin, their codec, and the version a
// plugin declares.
//
// Every transport (wasm linear memory, go-plugin gRPC, in-process) carries
// the same bytes: MessagePack maps keyed by Go field name, encoded and
// decoded by generated, reflection-free code (tinylib/msgp). docs/abi.md is
// the full specification, written for authors of plugins in other languages.
//
// One evaluation is one call: the host sends a ProcessRequest (the eval and
// a StateSync that brings the plugin's state mirror to the eval's snapshot
// index) and gets a ProcessResponse. While processing, the plugin calls back
// into the host for planner operations (Op): each takes one encoded message
// and returns one.
package abi

//go:generate go run github.com/tinylib/msgp@v1.6.5 -file . -o messages_gen.go -tests=false -io=false
//go:generate go run ../../internal/msgprewrite messages_gen.go

//msgp:ignore Error Version
