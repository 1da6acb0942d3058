package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/api"
)

// Deadlines are enforced by checks the module itself makes. At load,
// addInterruptChecks rewrites the module: it adds a countdown global and
// an imported host function, HostCheckpoint, and puts at the top of every
// loop and of every function body but small straight-line ones
//
//	global.get $countdown   i32.const charge   i32.sub   global.set $countdown
//	global.get $countdown   i32.const 0   i32.le_s
//	if
//	  call $checkpoint
//	  i32.const checkpointBudget   global.set $countdown
//	end
//
// A check's charge bounds the work until the next check: the bytes of code
// it guards (the loop's or the function's body: no instruction is shorter
// than a byte), plus the bytes of the unchecked functions that code can
// call. A bulk memory or table instruction is charged by its length as it
// runs. So checkpoint is called after at most about checkpointBudget
// instructions' worth of guest work. checkpoint is Go code: it stops the
// guest once the call's context is done, and it is where the guest's
// goroutine can be preempted, without which a guest that never returns
// would also hold up every stop-the-world pause of the host's Go runtime,
// and with it the whole agent. A check is a subtraction and a branch not
// taken; wazero's own mechanism, WithCloseOnContextDone, makes an indirect
// call into Go at every loop header instead, which Go's wasm code passes
// at every backward jump, and slowed Go guests 2 to 4x
// (docs/benchmarks.md). It remains the fallback for a module this
// rewriter cannot read.
//
// The rewriter refuses what would let a module reach the countdown (a
// global index at or past it, which only an invalid module has, since
// the rewriter's output is validated but its input is not) and what it
// does not parse (reference types beyond funcref and externref, tables
// with initialisers, 64-bit memories).

// HostCheckpoint is the host function the checks call.
const HostCheckpoint = "checkpoint"

// Charges, in bytes of code executed (an upper bound on instructions).
const (
	// checkpointBudget is the work between checkpoint calls: at most a few
	// milliseconds.
	checkpointBudget = 1 << 24
	// leafLimit is the largest function left unchecked: one without
	// loops, calls or bulk instructions, charged to its callers instead.
	leafLimit = 4096
	// bulkShift charges a bulk memory instruction one unit per 64 bytes.
	bulkShift = 6
)

// errUninstrumentable: the module uses an encoding the rewriter does not
// know (a proposal wazero may support but Go never emits).
var errUninstrumentable = errors.New("wasm: cannot add interrupt checks")

// errInterrupted stops a guest at a checkpoint.
var errInterrupted = errors.New("wasm: guest interrupted")

// checkpoint is the HostCheckpoint function. A panic in a host function
// unwinds the guest and is returned by the call that entered it.
func checkpoint(ctx context.Context, _ api.Module, _ []uint64) {
	if ctx.Err() != nil {
		panic(fmt.Errorf("%w: %w", errInterrupted, context.Cause(ctx)))
	}
}

// Section IDs of the binary format.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
)

type section struct {
	id   byte
	body []byte
}

// rewriter carries what the rewrite needs across sections.
type rewriter struct {
	// funcImports is the number of imported functions: the new import
	// takes index funcImports, and every function defined in the module
	// moves up by one.
	funcImports uint32
	// countdown is the new global's index; no original index reaches it.
	countdown uint32
	// params are the parameter counts of the types; funcs describe the
	// defined functions (pass one over the code section).
	params []uint32
	types  []uint32 // type index of each defined function
	funcs  []funcInfo
	// scratch holds a body's instructions while it is rewritten; loops
	// are the charges of its loops, in order.
	scratch []byte
	loops   []int
}

// funcInfo is what a caller's charge needs to know of a function.
type funcInfo struct {
	size                int
	calls, loops, bulks bool
}

// leaf: a function left unchecked, its size charged to its callers.
func (f funcInfo) leaf() bool { return !f.calls && !f.loops && !f.bulks && f.size <= leafLimit }

// fn maps a function index of the original module to the rewritten one.
func (w *rewriter) fn(i uint32) uint32 {
	if i >= w.funcImports {
		return i + 1
	}
	return i
}

// addInterruptChecks returns bin rewritten with interrupt checks. DWARF
// sections (.debug_*) are dropped: the checks move every code offset they
// describe.
func addInterruptChecks(bin []byte) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) || binary.LittleEndian.Uint32(bin[4:8]) != 1 {
		return nil, fmt.Errorf("%w: not a version 1 binary module", errUninstrumentable)
	}
	var secs []section
	r := &reader{b: bin, pos: 8}
	for r.pos < len(r.b) {
		id := r.byte()
		body := r.bytes(int(r.u32()))
		if r.err != nil {
			return nil, fmt.Errorf("%w: section %d: %v", errUninstrumentable, id, r.err)
		}
		if id == secCustom && strings.HasPrefix(customName(body), ".debug_") {
			continue
		}
		secs = append(secs, section{id: id, body: body})
	}
	w := &rewriter{}
	sig, err := w.voidType(&secs)
	if err != nil {
		return nil, err
	}
	globalImports, err := w.addImport(&secs, sig)
	if err != nil {
		return nil, err
	}
	if err := w.addGlobal(&secs, globalImports); err != nil {
		return nil, err
	}
	if i := sectionIndex(secs, secFunction); i >= 0 {
		if err := w.functionTypes(secs[i].body); err != nil {
			return nil, err
		}
	}
	if i := sectionIndex(secs, secTable); i >= 0 {
		if err := checkTables(secs[i].body); err != nil {
			return nil, err
		}
	}
	if i := sectionIndex(secs, secMemory); i >= 0 {
		if err := checkMemories(secs[i].body); err != nil {
			return nil, err
		}
	}
	if i := sectionIndex(secs, secCode); i >= 0 {
		if err := w.survey(secs[i].body); err != nil {
			return nil, fmt.Errorf("%w: %v", errUninstrumentable, err)
		}
	}
	for i := range secs {
		s := &secs[i]
		var err error
		switch s.id {
		case secExport:
			s.body, err = w.exports(s.body)
		case secStart:
			s.body, err = w.start(s.body)
		case secElement:
			s.body, err = w.elements(s.body)
		case secCode:
			s.body, err = w.code(s.body)
		case secCustom:
			if customName(s.body) == "name" {
				s.body = w.names(s.body)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUninstrumentable, err)
		}
	}
	out := make([]byte, 0, len(bin)+len(bin)/4)
	out = append(out, bin[:8]...)
	for _, s := range secs {
		out = append(out, s.id)
		out = appendU32(out, uint32(len(s.body)))
		out = append(out, s.body...)
	}
	return out, nil
}

// appendCheck appends a check that charges charge.
func (w *rewriter) appendCheck(out []byte, charge int) []byte {
	charge = min(max(charge, 1), checkpointBudget)
	get := appendU32([]byte{0x23}, w.countdown)
	set := appendU32([]byte{0x24}, w.countdown)
	out = append(out, get...)
	out = append(appendS32(append(out, 0x41), int32(charge)), 0x6b) // i32.const charge, i32.sub
	out = append(out, set...)
	out = append(out, get...)
	out = append(out, 0x41, 0x00, 0x4c, 0x04, 0x40) // i32.const 0, i32.le_s, if (no result)
	out = appendU32(append(out, 0x10), w.funcImports)
	out = appendS32(append(out, 0x41), checkpointBudget)
	out = append(out, set...)
	return append(out, 0x0b) // end
}

// appendBulkCharge appends, before a bulk instruction whose length is on
// top of the stack, the charge of that length (tee'd through local t).
func (w *rewriter) appendBulkCharge(out []byte, t uint32, shift byte) []byte {
	out = appendU32(append(out, 0x22), t) // local.tee t
	out = appendU32(append(out, 0x23), w.countdown)
	out = appendU32(append(out, 0x20), t)      // local.get t
	out = append(out, 0x41, shift, 0x76, 0x6b) // i32.const shift, i32.shr_u, i32.sub
	return appendU32(append(out, 0x24), w.countdown)
}

func customName(body []byte) string {
	r := &reader{b: body}
	name := r.bytes(int(r.u32()))
	if r.err != nil {
		return ""
	}
	return string(name)
}

func sectionIndex(secs []section, id byte) int {
	for i, s := range secs {
		if s.id == id {
			return i
		}
	}
	return -1
}

// sectionOrder is the order of the known sections in a module (the tag
// section, 13, comes between memory and global).
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// ensureSection returns the index of section id, inserting an empty one
// after the last non-custom section that precedes it.
func ensureSection(secs *[]section, id byte) int {
	if i := sectionIndex(*secs, id); i >= 0 {
		return i
	}
	at := 0
	for i, o := range *secs {
		if o.id != secCustom && sectionOrder[o.id] < sectionOrder[id] {
			at = i + 1
		}
	}
	*secs = append((*secs)[:at], append([]section{{id: id, body: []byte{0}}}, (*secs)[at:]...)...)
	return at
}

// voidType returns the index of the type () -> (), adding it if needed.
func (w *rewriter) voidType(secs *[]section) (uint32, error) {
	i := ensureSection(secs, secType)
	body := (*secs)[i].body
	r := &reader{b: body}
	n := r.u32()
	start := r.pos
	void := -1
	for k := uint32(0); k < n && r.err == nil; k++ {
		if form := r.byte(); form != 0x60 {
			return 0, fmt.Errorf("%w: type form 0x%02x", errUninstrumentable, form)
		}
		params := r.bytes(int(r.u32()))
		results := r.bytes(int(r.u32()))
		for _, t := range append(params[:len(params):len(params)], results...) {
			if !simpleType(t) {
				return 0, fmt.Errorf("%w: value type 0x%02x", errUninstrumentable, t)
			}
		}
		w.params = append(w.params, uint32(len(params)))
		if len(params) == 0 && len(results) == 0 && void < 0 {
			void = int(k)
		}
	}
	if r.err != nil {
		return 0, fmt.Errorf("%w: type section: %v", errUninstrumentable, r.err)
	}
	if void >= 0 {
		return uint32(void), nil
	}
	out := append(appendU32(nil, n+1), body[start:]...)
	(*secs)[i].body = append(out, 0x60, 0x00, 0x00)
	w.params = append(w.params, 0)
	return n, nil
}

// addImport appends the checkpoint import and counts the imports; it
// returns the number of imported globals.
func (w *rewriter) addImport(secs *[]section, sig uint32) (uint32, error) {
	i := ensureSection(secs, secImport)
	body := (*secs)[i].body
	r := &reader{b: body}
	n, globals := r.u32(), uint32(0)
	start := r.pos
	for k := uint32(0); k < n && r.err == nil; k++ {
		r.bytes(int(r.u32())) // module
		r.bytes(int(r.u32())) // name
		switch kind := r.byte(); kind {
		case 0x00: // function: type index
			r.u32()
			w.funcImports++
		case 0x01: // table: reference type, limits
			if t := r.byte(); t != 0x70 && t != 0x6f {
				return 0, fmt.Errorf("%w: table type 0x%02x", errUninstrumentable, t)
			}
			r.limits()
		case 0x02: // memory: limits
			if flags := r.limits(); flags&0x04 != 0 {
				return 0, fmt.Errorf("%w: a 64-bit memory", errUninstrumentable)
			}
		case 0x03: // global: value type, mutability
			if t := r.byte(); !simpleType(t) {
				return 0, fmt.Errorf("%w: value type 0x%02x", errUninstrumentable, t)
			}
			r.byte()
			globals++
		default:
			return 0, fmt.Errorf("%w: import kind 0x%02x", errUninstrumentable, kind)
		}
	}
	if r.err != nil {
		return 0, fmt.Errorf("%w: import section: %v", errUninstrumentable, r.err)
	}
	out := appendU32(nil, n+1)
	out = append(out, body[start:r.pos]...)
	out = appendName(out, HostModule)
	out = appendName(out, HostCheckpoint)
	out = appendU32(append(out, 0x00), sig)
	(*secs)[i].body = out
	return globals, nil
}

// addGlobal appends the countdown global, rewriting the function indices
// in the other globals' initialisers.
func (w *rewriter) addGlobal(secs *[]section, globalImports uint32) error {
	i := ensureSection(secs, secGlobal)
	r := &reader{b: (*secs)[i].body}
	n := r.u32()
	w.countdown = globalImports + n
	out := appendU32(nil, n+1)
	for k := uint32(0); k < n && r.err == nil; k++ {
		t := r.bytes(2) // value type, mutability
		if len(t) == 2 && !simpleType(t[0]) {
			return fmt.Errorf("%w: value type 0x%02x", errUninstrumentable, t[0])
		}
		out = append(out, t...)
		var err error
		if out, err = w.expr(out, r); err != nil {
			return fmt.Errorf("%w: global %d: %v", errUninstrumentable, k, err)
		}
	}
	if r.err != nil || r.pos != len(r.b) {
		return fmt.Errorf("%w: global section: malformed", errUninstrumentable)
	}
	out = append(out, 0x7f, 0x01, 0x41)                  // i32, mutable, i32.const
	out = append(appendS32(out, checkpointBudget), 0x0b) // ..., end
	(*secs)[i].body = out
	return nil
}

func (w *rewriter) exports(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := appendU32(nil, n)
	for k := uint32(0); k < n && r.err == nil; k++ {
		out = appendName(out, string(r.bytes(int(r.u32()))))
		kind := r.byte()
		idx := r.u32()
		switch {
		case kind == 0x00:
			idx = w.fn(idx)
		case kind == 0x03 && idx >= w.countdown:
			return nil, fmt.Errorf("export of global %d, which does not exist", idx)
		}
		out = appendU32(append(out, kind), idx)
	}
	if r.err != nil || r.pos != len(body) {
		return nil, errors.New("export section: malformed")
	}
	return out, nil
}

func (w *rewriter) start(body []byte) ([]byte, error) {
	r := &reader{b: body}
	idx := r.u32()
	if r.err != nil {
		return nil, errors.New("start section: malformed")
	}
	return appendU32(nil, w.fn(idx)), nil
}

// elements rewrites the function indices of element segments (all eight
// encodings of the reference-types proposal).
func (w *rewriter) elements(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := appendU32(nil, n)
	for k := uint32(0); k < n && r.err == nil; k++ {
		flags := r.u32()
		if flags > 7 {
			return nil, fmt.Errorf("element segment %d: flags %d", k, flags)
		}
		out = appendU32(out, flags)
		var err error
		if flags&0x02 != 0 && flags&0x01 == 0 { // explicit table index
			out = appendU32(out, r.u32())
		}
		if flags&0x01 == 0 { // active: offset expression
			if out, err = w.expr(out, r); err != nil {
				return nil, fmt.Errorf("element segment %d: %v", k, err)
			}
		}
		if flags&0x03 != 0 { // element kind (0x00) or reference type
			t := r.byte()
			if t != 0x00 && t != 0x70 && t != 0x6f {
				return nil, fmt.Errorf("element segment %d: reference type 0x%02x", k, t)
			}
			out = append(out, t)
		}
		items := r.u32()
		out = appendU32(out, items)
		for j := uint32(0); j < items && r.err == nil; j++ {
			if flags&0x04 == 0 {
				out = appendU32(out, w.fn(r.u32()))
			} else if out, err = w.expr(out, r); err != nil {
				return nil, fmt.Errorf("element segment %d: %v", k, err)
			}
		}
	}
	if r.err != nil || r.pos != len(body) {
		return nil, errors.New("element section: malformed")
	}
	return out, nil
}

// expr copies a constant expression up to its end, rewriting ref.func.
func (w *rewriter) expr(out []byte, r *reader) ([]byte, error) {
	from := r.pos
	for r.err == nil {
		at := r.pos
		op := r.byte()
		if op == 0x0b {
			return append(out, r.b[from:r.pos]...), nil
		}
		if op == 0xd2 { // ref.func
			out = append(out, r.b[from:at+1]...)
			out = appendU32(out, w.fn(r.u32()))
			from = r.pos
			continue
		}
		if _, err := w.instr(r, op); err != nil {
			return nil, err
		}
	}
	return nil, r.err
}

// functionTypes reads the function section: each defined function's type.
func (w *rewriter) functionTypes(body []byte) error {
	return eachEntry(body, "function", func(r *reader, k uint32) error {
		t := r.u32()
		if int(t) >= len(w.params) {
			return fmt.Errorf("function %d has no type %d", k, t)
		}
		w.types = append(w.types, t)
		return nil
	})
}

// checkTables refuses tables the rewriter does not parse: reference types
// other than funcref and externref, and initialiser expressions (which
// could hold a ref.func to renumber).
func checkTables(body []byte) error {
	return eachEntry(body, "table", func(r *reader, k uint32) error {
		if t := r.byte(); t != 0x70 && t != 0x6f {
			return fmt.Errorf("table %d: type 0x%02x", k, t)
		}
		r.limits()
		return nil
	})
}

// checkMemories refuses 64-bit memories: the bulk charges take 32-bit
// lengths.
func checkMemories(body []byte) error {
	return eachEntry(body, "memory", func(r *reader, k uint32) error {
		if flags := r.limits(); flags&0x04 != 0 {
			return fmt.Errorf("memory %d is 64-bit", k)
		}
		return nil
	})
}

// eachEntry calls read for each entry of a section that is one vector,
// and checks that the entries fill the section.
func eachEntry(body []byte, what string, read func(r *reader, k uint32) error) error {
	r := &reader{b: body}
	n := r.u32()
	for k := uint32(0); k < n && r.err == nil; k++ {
		if err := read(r, k); err != nil {
			return fmt.Errorf("%w: %v", errUninstrumentable, err)
		}
	}
	if r.err != nil || r.pos != len(body) {
		return fmt.Errorf("%w: %s section: malformed", errUninstrumentable, what)
	}
	return nil
}

// survey is pass one over the code section: what each function does.
func (w *rewriter) survey(body []byte) error {
	r := &reader{b: body}
	count := r.u32()
	if int(count) != len(w.types) {
		return fmt.Errorf("%d bodies for %d functions", count, len(w.types))
	}
	for k := uint32(0); k < count && r.err == nil; k++ {
		code := r.bytes(int(r.u32()))
		f := funcInfo{size: len(code)}
		br := &reader{b: code}
		if _, err := w.locals(br); err != nil {
			return fmt.Errorf("function %d: %v", k, err)
		}
		for br.pos < len(code) && br.err == nil {
			op := br.byte()
			sub, err := w.instr(br, op)
			if err != nil {
				return fmt.Errorf("function %d: %v", k, err)
			}
			switch {
			case isCall(op):
				f.calls = true
			case op == 0x03:
				f.loops = true
			case op == 0xfc && bulkShiftOf(sub) >= 0:
				f.bulks = true
			}
		}
		if br.err != nil {
			return fmt.Errorf("function %d: %v", k, br.err)
		}
		w.funcs = append(w.funcs, f)
	}
	if r.err != nil || r.pos != len(body) {
		return errors.New("code section: malformed")
	}
	return nil
}

func isCall(op byte) bool { return op >= 0x10 && op <= 0x13 }

// bulkShiftOf is how a bulk instruction (0xfc sub) is charged: its length
// shifted right by the result; -1 for the others.
func bulkShiftOf(sub uint32) int {
	switch sub {
	case 8, 10, 11: // memory.init, memory.copy, memory.fill: bytes
		return bulkShift
	case 12, 14, 17: // table.init, table.copy, table.fill: elements
		return 0
	}
	return -1
}

// locals skips a body's local declarations, refusing reference types it
// does not know, and returns how many locals they declare.
func (w *rewriter) locals(r *reader) (uint32, error) {
	groups := r.u32()
	var n uint32
	for k := uint32(0); k < groups && r.err == nil; k++ {
		n += r.u32()
		if t := r.byte(); !simpleType(t) {
			return 0, fmt.Errorf("local type 0x%02x", t)
		}
	}
	return n, r.err
}

// calleeCharge is what a call charges its caller's check: an unchecked
// function's size; an indirect call may reach any of them.
func (w *rewriter) calleeCharge(op byte, idx uint32) int {
	switch op {
	case 0x10, 0x12:
		if i := int64(idx) - int64(w.funcImports); i >= 0 && i < int64(len(w.funcs)) && w.funcs[i].leaf() {
			return w.funcs[i].size
		}
	case 0x11, 0x13:
		return leafLimit
	}
	return 0
}

func (w *rewriter) code(body []byte) ([]byte, error) {
	return mapBodies(body, w.body)
}

// mapBodies returns the code section body with each function's body
// (locals and code) replaced by what rewrite appends to out for it; k is
// the function's index among those the module defines.
func mapBodies(body []byte, rewrite func(out, code []byte, k int) ([]byte, error)) ([]byte, error) {
	r := &reader{b: body}
	count := r.u32()
	out := appendU32(make([]byte, 0, len(body)+len(body)/4), count)
	var fn []byte
	for k := uint32(0); k < count && r.err == nil; k++ {
		code := r.bytes(int(r.u32()))
		if r.err != nil {
			return nil, fmt.Errorf("code section: %v", r.err)
		}
		var err error
		if fn, err = rewrite(fn[:0], code, int(k)); err != nil {
			return nil, fmt.Errorf("function %d: %v", k, err)
		}
		out = appendU32(out, uint32(len(fn)))
		out = append(out, fn...)
	}
	if r.err != nil || r.pos != len(body) {
		return nil, errors.New("code section: malformed")
	}
	return out, nil
}

// charges computes, for function k's body after its locals, the charge of
// its entry check and of each loop's, in order: the bytes each guards
// plus what its calls charge (a running total, read at a loop's end).
func (w *rewriter) charges(code []byte, start int) (entry int, err error) {
	w.loops = w.loops[:0]
	type open struct {
		loop   int // index in w.loops, -1 for block and if
		at     int // running total at the opening
		offset int
	}
	var stack []open
	total := 0
	r := &reader{b: code, pos: start}
	for r.pos < len(code) {
		at := r.pos
		op := r.byte()
		idx, err := w.instr(r, op)
		if err != nil {
			return 0, err
		}
		total += r.pos - at + w.calleeCharge(op, idx)
		switch op {
		case 0x02, 0x04: // block, if
			stack = append(stack, open{loop: -1})
		case 0x03:
			stack = append(stack, open{loop: len(w.loops), at: total, offset: r.pos})
			w.loops = append(w.loops, 0)
		case 0x0b:
			if len(stack) > 0 {
				o := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if o.loop >= 0 {
					w.loops[o.loop] = total - o.at
				}
			}
		}
	}
	return total, r.err
}

// body rewrites defined function k's body: checks at its top (unless it
// is a small leaf) and in every loop, bulk instructions charged by their
// length, and the new function indices.
func (w *rewriter) body(out, code []byte, k int) ([]byte, error) {
	r := &reader{b: code}
	locals, err := w.locals(r)
	if err != nil {
		return nil, err
	}
	localsEnd := r.pos
	entry, err := w.charges(code, localsEnd)
	if err != nil {
		return nil, err
	}
	f := w.funcs[k]
	// A function with bulk instructions gets a local to tee their length
	// through: declared last, its index follows the parameters and locals.
	t := w.params[w.types[k]] + locals
	if f.bulks {
		gr := &reader{b: code}
		groups := gr.u32()
		declared := gr.pos
		out = appendU32(out, groups+1)
		out = append(out, code[declared:localsEnd]...)
		out = append(out, 0x01, 0x7f) // one i32
	} else {
		out = append(out, code[:localsEnd]...)
	}
	if !f.leaf() {
		out = w.appendCheck(out, entry)
	}
	rest := w.scratch[:0]
	from, loop := localsEnd, 0
	for r.pos < len(code) {
		at := r.pos
		op := r.byte()
		idx, err := w.instr(r, op)
		if err != nil {
			return nil, err
		}
		switch op {
		case 0xfc: // idx is the sub-opcode
			if shift := bulkShiftOf(idx); shift >= 0 {
				rest = append(rest, code[from:at]...)
				rest = w.appendBulkCharge(rest, t, byte(shift))
				from = at
			}
		case 0x10, 0x12, 0xd2: // call, return_call, ref.func
			rest = append(rest, code[from:at+1]...)
			rest = appendU32(rest, w.fn(idx))
			from = r.pos
		case 0x03: // loop: check at the top of every iteration
			rest = append(rest, code[from:r.pos]...)
			rest = w.appendCheck(rest, w.loops[loop])
			loop++
			from = r.pos
		}
	}
	rest = append(rest, code[from:]...)
	w.scratch = rest
	return append(out, rest...), nil
}

// names rewrites the function indices of the name section (function,
// local and label names); a subsection it cannot read ends the section
// there, as names are only for display.
func (w *rewriter) names(body []byte) []byte {
	r := &reader{b: body}
	r.bytes(int(r.u32())) // "name"
	out := append([]byte(nil), body[:r.pos]...)
	for r.pos < len(body) {
		id := r.byte()
		sub := r.bytes(int(r.u32()))
		if r.err != nil {
			return out
		}
		if id >= 1 && id <= 3 {
			sr := &reader{b: sub}
			n := sr.u32()
			s := appendU32(nil, n)
			for k := uint32(0); k < n && sr.err == nil; k++ {
				s = appendU32(s, w.fn(sr.u32()))
				start := sr.pos
				if id == 1 {
					sr.bytes(int(sr.u32()))
				} else { // a name map per function
					m := sr.u32()
					for j := uint32(0); j < m && sr.err == nil; j++ {
						sr.u32()
						sr.bytes(int(sr.u32()))
					}
				}
				s = append(s, sub[start:sr.pos]...)
			}
			if sr.err != nil || sr.pos != len(sub) {
				return out
			}
			sub = s
		}
		out = append(out, id)
		out = appendU32(out, uint32(len(sub)))
		out = append(out, sub...)
	}
	return out
}

// reader reads the binary format; the first error sticks.
type reader struct {
	b   []byte
	pos int
	err error
}

var errShort = errors.New("unexpected end")

func (r *reader) byte() byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.fail(errShort)
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.pos {
		r.fail(errShort)
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// leb reads a LEB128 number of at most maxBytes bytes and returns its low
// 64 bits as unsigned.
func (r *reader) leb(maxBytes int) uint64 {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if i < 10 {
			v |= uint64(c&0x7f) << (7 * i)
		}
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("LEB128 number too long"))
	return 0
}

// u32 reads an unsigned LEB128 number of 32 bits; a fifth byte with bits
// past the 32nd is an error, as in a validator.
func (r *reader) u32() uint32 {
	start := r.pos
	v := r.leb(5)
	if r.err == nil && r.pos-start == 5 && r.b[r.pos-1] > 0x0f {
		r.fail(errors.New("LEB128 number past 32 bits"))
	}
	return uint32(v)
}

// limits reads table or memory limits and returns their flags.
func (r *reader) limits() byte {
	flags := r.byte()
	r.leb(10) // minimum (64-bit for memory64)
	if flags&0x01 != 0 {
		r.leb(10) // maximum
	}
	return flags
}

// simpleType: a number, vector, funcref or externref value type, each one
// byte; other reference types are longer.
func simpleType(t byte) bool {
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 { // multiple memories: a memory index follows
		r.u32()
	}
	r.leb(10) // offset (64-bit for memory64)
}

// instr reads the immediates of instruction op. It returns the first one
// where a caller may need it: the function index of call, return_call and
// ref.func, the sub-opcode of a 0xfc instruction, the depth of br and
// br_if, the index of a local, and the low 32 bits of an i32.const's
// encoding. It refuses global indices at or past the countdown's.
func (w *rewriter) instr(r *reader, op byte) (uint32, error) {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if: block type
		switch c := r.byte(); {
		case c&0x80 != 0: // a type index of several bytes
			r.pos--
			r.leb(5)
		case c >= 0x40 && c != 0x40 && !simpleType(c):
			return 0, fmt.Errorf("block type 0x%02x", c)
		}
	case op == 0x0c || op == 0x0d: // br, br_if
		return r.u32(), r.err
	case op == 0x0e: // br_table
		n := r.u32()
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == 0x10 || op == 0x12 || op == 0xd2: // call, return_call, ref.func
		return r.u32(), r.err
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select with types
		for _, t := range r.bytes(int(r.u32())) {
			if !simpleType(t) {
				return 0, fmt.Errorf("select type 0x%02x", t)
			}
		}
	case op == 0x23 || op == 0x24: // global.get, global.set
		if g := r.u32(); g >= w.countdown && r.err == nil {
			return 0, fmt.Errorf("global %d does not exist", g)
		}
	case op >= 0x20 && op <= 0x26: // locals, table.get/set
		return r.u32(), r.err
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.memarg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == 0x41: // i32.const
		return uint32(r.leb(5)), r.err
	case op == 0x42: // i64.const
		r.leb(10)
	case op == 0x43: // f32.const
		r.bytes(4)
	case op == 0x44: // f64.const
		r.bytes(8)
	case op == 0xd0: // ref.null: heap type
		if t := r.byte(); t != 0x70 && t != 0x6f {
			return 0, fmt.Errorf("heap type 0x%02x", t)
		}
	case op == 0xfc:
		sub := r.u32()
		return sub, r.miscImmediates(sub)
	case op == 0xfd:
		return 0, r.vectorImmediates(r.u32())
	case op == 0xfe:
		return 0, r.atomicImmediates(r.u32())
	case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b,
		op >= 0x45 && op <= 0xc4, op == 0xd1:
		// no immediates
	default:
		return 0, fmt.Errorf("unknown opcode 0x%02x at %d", op, r.pos-1)
	}
	return 0, r.err
}

// miscImmediates: the 0xfc prefix (saturating truncation, bulk memory and
// table instructions).
func (r *reader) miscImmediates(sub uint32) error {
	switch {
	case sub <= 7: // trunc_sat
	case sub == 8: // memory.init: data index, memory
		r.u32()
		r.u32()
	case sub == 9 || sub == 11 || sub == 13 || sub >= 15 && sub <= 17: // data.drop, memory.fill, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 10 || sub == 12 || sub == 14: // memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	default:
		return fmt.Errorf("unknown instruction 0xfc %d", sub)
	}
	return nil
}

// vectorImmediates: the 0xfd prefix (fixed-width SIMD, relaxed SIMD).
func (r *reader) vectorImmediates(sub uint32) error {
	switch {
	case sub <= 0x0b, sub == 0x5c, sub == 0x5d: // loads and stores
		r.memarg()
	case sub == 0x0c || sub == 0x0d: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 0x15 && sub <= 0x22: // extract and replace lane
		r.byte()
	case sub >= 0x54 && sub <= 0x5b: // load and store lane
		r.memarg()
		r.byte()
	case sub <= 0x113:
		// no immediates
	default:
		return fmt.Errorf("unknown instruction 0xfd %d", sub)
	}
	return nil
}

// atomicImmediates: the 0xfe prefix (threads).
func (r *reader) atomicImmediates(sub uint32) error {
	switch {
	case sub == 0x03: // atomic.fence
		r.byte()
	case sub <= 0x4e:
		r.memarg()
	default:
		return fmt.Errorf("unknown instruction 0xfe %d", sub)
	}
	return nil
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendS32 appends v as a signed LEB128 number.
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
