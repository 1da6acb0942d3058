package wasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// threadJumps returns bin with the forward jumps of Go's wasm code made
// direct branches.
//
// Go's wasm backend does not structure a function's control flow. It
// opens, at the top of a function, a loop around one block per jump
// target ("resume point"), and dispatches on the PC_B parameter (local
// 0) with a br_table:
//
//	loop
//	  block ... block          ;; n blocks
//	    local.get 0
//	    br_table ...           ;; PC value -> resume point
//	  end                      ;; code of resume point 0
//	  ...
//	  end                      ;; code of resume point n-1
//	end
//
// and every jump is "i32.const pc; local.set 0; br <the loop>": back to
// the top, through the br_table, an indirect jump wazero cannot follow.
// A jump from the code of resume point j to a later one, k > j, lands at
// the end of a block it is inside, so it can be a plain br to that
// block's label. Backward jumps keep going through the loop.
//
// A function is rewritten only where it has that shape and local 0 is
// read nowhere but by the dispatch and right after it is set, so that
// leaving it unset on a threaded jump is never seen. Any other function
// is left as it was, and so is a module this does not parse (the error
// says why). DWARF sections (.debug_*) are dropped: the code they
// describe has moved.
//
// Measured, paired in one process against the same plugins loaded
// without it (docs/benchmarks.md, "seventeenth session"): 0.91 to 1.14
// times the placements per second over the seven scenarios, steadily
// faster only on service-10x100 (1.06 to 1.09); BenchmarkPlace built for
// wasip1, 5 to 8% less time per eval.
//
// The interrupt checks (interrupt.go) are added after this pass. A
// threaded jump no longer passes the check at the top of the loop, but it
// only moves forward, so work between checks stays bounded by the code
// between them.
func threadJumps(bin []byte) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) || binary.LittleEndian.Uint32(bin[4:8]) != 1 {
		return nil, errors.New("not a version 1 binary module")
	}
	out := append(make([]byte, 0, len(bin)), bin[:8]...)
	r := &reader{b: bin, pos: 8}
	w := &rewriter{countdown: ^uint32(0)} // only to read instructions
	for r.pos < len(r.b) {
		id := r.byte()
		body := r.bytes(int(r.u32()))
		if r.err != nil {
			return nil, fmt.Errorf("section %d: %v", id, r.err)
		}
		switch {
		case id == secCode:
			var err error
			if body, err = w.threadCode(body); err != nil {
				return nil, err
			}
		case id == secCustom && strings.HasPrefix(customName(body), ".debug_"):
			continue
		}
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// threadCode threads the bodies of a code section.
func (w *rewriter) threadCode(body []byte) ([]byte, error) {
	var ins []instruction
	return mapBodies(body, func(out, code []byte, _ int) ([]byte, error) {
		var err error
		out, ins, err = w.threadBody(out, code, ins[:0])
		return out, err
	})
}

// Opcodes the pass reads or writes.
const (
	opBlock     = 0x02
	opLoop      = 0x03
	opIf        = 0x04
	opEnd       = 0x0b
	opBr        = 0x0c
	opBrIf      = 0x0d
	opBrTable   = 0x0e
	opLocalGet  = 0x20
	opLocalSet  = 0x21
	opLocalTee  = 0x22
	opGlobalGet = 0x23
	opI32Const  = 0x41
)

// emptyBlockType is the block type of a block without parameters or
// results.
const emptyBlockType = 0x40

// negative stands for a negative i32.const.
const negative = 1 << 63

// instruction is one instruction of a body: where it is, and its opcode
// and first immediate (an index, a depth, a constant, a block type's
// first byte).
type instruction struct {
	at, end int
	op      byte
	imm     uint64
}

// threadBody appends function code, its forward jumps threaded, to out;
// ins is a buffer for the body's instructions, returned for the next.
func (w *rewriter) threadBody(out, code []byte, ins []instruction) ([]byte, []instruction, error) {
	r := &reader{b: code}
	if _, err := w.locals(r); err != nil {
		return nil, ins, err
	}
	start := r.pos
	var table []uint32 // the dispatch's br_table labels, default last
	for r.pos < len(code) {
		at := r.pos
		op := r.byte()
		if op == opBrTable && table == nil {
			if table = brTableLabels(code[r.pos:]); table == nil {
				return nil, ins, errShort
			}
		}
		idx, err := w.instr(r, op)
		if err != nil {
			return nil, ins, err
		}
		imm := uint64(idx)
		switch op {
		case opI32Const:
			if code[r.pos-1]&0x40 != 0 {
				imm = negative // a jump's PC value is never negative
			}
		case opBlock, opLoop, opIf:
			imm = uint64(code[at+1]) // the block type's first byte
		}
		ins = append(ins, instruction{at: at, end: r.pos, op: op, imm: imm})
	}
	edits, ok := threadable(ins, table)
	if !ok || len(edits) == 0 {
		return append(out, code...), ins, nil
	}
	out = append(out, code[:start]...)
	from := start
	for _, e := range edits {
		out = append(out, code[from:ins[e.first].at]...)
		out = appendU32(append(out, opBr), e.depth)
		from = ins[e.first+2].end
	}
	return append(out, code[from:]...), ins, nil
}

// brTableLabels reads a br_table's labels, the default last, from b (the
// bytes after its opcode); nil if b does not hold them.
func brTableLabels(b []byte) []uint32 {
	r := &reader{b: b}
	n := r.u32()
	if r.err != nil || int64(n) >= int64(len(b)-r.pos) { // a label takes a byte at least
		return nil
	}
	labels := make([]uint32, 0, n+1)
	for i := uint32(0); i <= n && r.err == nil; i++ {
		labels = append(labels, r.u32())
	}
	if r.err != nil {
		return nil
	}
	return labels
}

// edit replaces instructions first..first+2 (i32.const, local.set 0, br)
// with a br of depth.
type edit struct {
	first int
	depth uint32
}

// threadable finds the forward jumps of a function of Go's shape (see
// threadJumps); ok is false when the function does not have it.
func threadable(ins []instruction, table []uint32) (edits []edit, ok bool) {
	// The head: the SP cache's load (global.get, local.set), [block] loop
	// block*n local.get 0 br_table end.
	i := 0
	for i < len(ins) && (ins[i].op == opGlobalGet || ins[i].op == opLocalSet && ins[i].imm != 0) {
		i++
	}
	if i+1 < len(ins) && ins[i].op == opBlock && ins[i+1].op == opLoop {
		i++
	}
	if i >= len(ins) || ins[i].op != opLoop || ins[i].imm != emptyBlockType {
		return nil, false
	}
	i++
	n := 0
	for i < len(ins) && ins[i].op == opBlock {
		if ins[i].imm != emptyBlockType {
			return nil, false // a branch to it would carry values
		}
		n++
		i++
	}
	if n == 0 || i+2 >= len(ins) || ins[i].op != opLocalGet || ins[i].imm != 0 ||
		ins[i+1].op != opBrTable || ins[i+2].op != opEnd || len(table) == 0 {
		return nil, false
	}
	dispatch := i
	for k, in := range ins {
		if in.op == opLocalGet && in.imm == 0 && k != dispatch && (k == 0 || !setsLocal0(ins[k-1])) {
			return nil, false // local 0 read where a threaded jump leaves it stale
		}
	}
	for _, t := range table {
		if t >= uint32(n) {
			return nil, false // a label past the resume points' blocks
		}
	}
	i += 3
	// Walk the resume points' code: region j is inside blocks j+1..n-1,
	// the loop beyond them; nest counts the constructs opened in it.
	region, nest := 0, 0
	for ; i < len(ins) && region < n; i++ {
		in := ins[i]
		switch in.op {
		case opBlock, opLoop, opIf:
			nest++
		case opEnd:
			if nest == 0 {
				region++
			} else {
				nest--
			}
		case opBr:
			loop := uint64(nest + n - 1 - region)
			if in.imm != loop || i < 2 || ins[i-1].op != opLocalSet || ins[i-1].imm != 0 || ins[i-2].op != opI32Const {
				continue
			}
			pc := ins[i-2].imm
			target := table[len(table)-1]
			if pc < uint64(len(table)-1) {
				target = table[pc]
			}
			if int(target) > region {
				edits = append(edits, edit{first: i - 2, depth: uint32(nest + int(target) - region - 1)})
			}
		}
	}
	return edits, true
}

// setsLocal0: local.set 0 or local.tee 0.
func setsLocal0(in instruction) bool {
	return (in.op == opLocalSet || in.op == opLocalTee) && in.imm == 0
}
