package sdk

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// msgpScoreMeta is the MarshalMsg msgp v1.6.5 generated for NodeScoreMeta
// (model_gen.go before gen.go ignored it), its key bytes written as msgp
// writes them and the values with msgp's append functions: the reference
// the hand-written encoder must equal byte for byte.
func msgpScoreMeta(b []byte, z *NodeScoreMeta) []byte {
	n := uint8(0)
	if z.NodeID != "" {
		n++
	}
	if z.Scores != nil {
		n++
	}
	if z.NormScore != 0 {
		n++
	}
	o := append(b, 0x80|n)
	if z.NodeID != "" {
		o = append(o, 0xa6, 0x4e, 0x6f, 0x64, 0x65, 0x49, 0x44) // "NodeID"
		o = msgp.AppendString(o, z.NodeID)
	}
	if z.Scores != nil {
		o = append(o, 0xa6, 0x53, 0x63, 0x6f, 0x72, 0x65, 0x73) // "Scores"
		o = msgp.AppendArrayHeader(o, uint32(len(z.Scores)))
		for _, s := range z.Scores {
			o = append(o, 0x92)
			o = msgp.AppendString(o, s.Name)
			o = msgp.AppendFloat64(o, s.Score)
		}
	}
	if z.NormScore != 0 {
		o = append(o, 0xa9, 0x4e, 0x6f, 0x72, 0x6d, 0x53, 0x63, 0x6f, 0x72, 0x65) // "NormScore"
		o = msgp.AppendFloat64(o, z.NormScore)
	}
	return o
}

// randomScoreMeta draws score metadata with every omission, string length
// class (fixstr, str8, str16), score count class (fixarray, array16) and
// float edge case.
func randomScoreMeta(r *rand.Rand) *NodeScoreMeta {
	str := func() string {
		switch r.IntN(5) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("n", 31)
		case 2:
			return strings.Repeat("x", 32+r.IntN(224))
		case 3:
			return strings.Repeat("y", 256+r.IntN(300))
		}
		return "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f"
	}
	float := func() float64 {
		switch r.IntN(6) {
		case 0:
			return 0
		case 1:
			return math.Inf(1 - 2*r.IntN(2))
		case 2:
			return math.Copysign(0, -1)
		case 3:
			return math.SmallestNonzeroFloat64
		}
		return r.NormFloat64()
	}
	z := &NodeScoreMeta{NodeID: str(), NormScore: float()}
	switch r.IntN(4) {
	case 0: // nil
	case 1:
		z.Scores = NodeScores{}
	default:
		for range r.IntN(20) {
			z.Scores = append(z.Scores, NodeScore{Name: str(), Score: float()})
		}
	}
	return z
}

// TestNodeScoreMeta_MarshalAsMsgp: the hand-written encoder writes msgp's
// bytes (appended to what the buffer holds), and the generated decoder
// reads them back.
func TestNodeScoreMeta_MarshalAsMsgp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		z := randomScoreMeta(r)
		prefix := []byte{0xc0, 0x01}
		got, err := z.MarshalMsg(bytes.Clone(prefix))
		if err != nil {
			t.Fatal(err)
		}
		if want := msgpScoreMeta(bytes.Clone(prefix), z); !bytes.Equal(got, want) {
			t.Fatalf("case %d %+v:\n got %x\nwant %x", i, z, got, want)
		}
		var back NodeScoreMeta
		rest, err := back.UnmarshalMsg(got[len(prefix):])
		if err != nil || len(rest) != 0 {
			t.Fatalf("case %d: decode: %v, %d bytes left", i, err, len(rest))
		}
		// msgp decodes an empty list as nil, whoever encoded it.
		want := *z
		if len(want.Scores) == 0 {
			want.Scores = nil
		}
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("case %d: decoded %+v, want %+v", i, back, *z)
		}
	}
	if got, _ := (&NodeScoreMeta{NormScore: math.NaN()}).MarshalMsg(nil); !bytes.Equal(got, msgpScoreMeta(nil, &NodeScoreMeta{NormScore: math.NaN()})) {
		t.Fatalf("NaN: %x", got)
	}
}

// FuzzNodeScoreMeta_Marshal checks the encoder against msgp's on what the
// fuzzer makes of a node ID, a scorer name and two scores.
func FuzzNodeScoreMeta_Marshal(f *testing.F) {
	f.Add("0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f", "binpack", 0.5, -0.25, 3)
	f.Add("", "", 0.0, 0.0, 0)
	f.Add(strings.Repeat("a", 300), strings.Repeat("b", 40), math.Inf(1), math.NaN(), 17)
	f.Fuzz(func(t *testing.T, nodeID, name string, score, norm float64, n int) {
		z := &NodeScoreMeta{NodeID: nodeID, NormScore: norm}
		if n > 0 {
			for i := range n % 40 {
				z.Scores = append(z.Scores, NodeScore{Name: name[:len(name)*i/max(n%40, 1)], Score: score})
			}
		}
		got, _ := z.MarshalMsg(nil)
		if want := msgpScoreMeta(nil, z); !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %x\nwant %x", z, got, want)
		}
	})
}

// BenchmarkNodeScoreMeta_Marshal encodes a batch placement's score
// metadata (two nodes, four scores each) with the hand-written encoder
// and with msgp's functions, as the generated code did.
func BenchmarkNodeScoreMeta_Marshal(b *testing.B) {
	metas := []*NodeScoreMeta{
		{NodeID: "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f01", NormScore: 0.05, Scores: NodeScores{{"binpack", 0.05},
			{"job-anti-affinity", 0}, {"node-affinity", 0}, {"node-reschedule-penalty", 0}}},
		{NodeID: "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f02", NormScore: 0.048, Scores: NodeScores{{"binpack", 0.09},
			{"job-anti-affinity", -0.002}, {"node-affinity", 0}, {"node-reschedule-penalty", 0}}},
	}
	buf := make([]byte, 0, 1024)
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, z := range metas {
				buf, _ = z.MarshalMsg(buf)
			}
		}
	})
	b.Run("msgp", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, z := range metas {
				buf = msgpScoreMeta(buf, z)
			}
		}
	})
}
