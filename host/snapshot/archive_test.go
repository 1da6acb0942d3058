package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func archive(t testing.TB, state string) []byte {
	t.Helper()
	var buf bytes.Buffer
	m := Meta{Version: 1, ID: "1-2-3", Index: 42, Term: 2, Size: int64(len(state)), DroverVersion: "test", CreateTime: time.Unix(1, 0).UTC()}
	if err := Write(&buf, m, strings.NewReader(state)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rewrite applies edit to each file of an archive and packs it again.
func rewrite(t *testing.T, arc []byte, edit func(name string, body []byte) (string, []byte, bool)) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(arc))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		name, body, keep := edit(hdr.Name, body)
		if !keep {
			continue
		}
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(body)
	}
	_ = tw.Close()
	_ = zw.Close()
	return out.Bytes()
}

func TestArchive_RoundTrip(t *testing.T) {
	a, err := Read(bytes.NewReader(archive(t, "the state")), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got, _ := io.ReadAll(a.State)
	if string(got) != "the state" || a.Meta.Index != 42 || a.Meta.Term != 2 || a.Meta.ID != "1-2-3" || a.Meta.DroverVersion != "test" || a.Meta.Version != 1 {
		t.Fatalf("read back %q, %+v", got, a.Meta)
	}
}

func TestArchive_RefusesDamage(t *testing.T) {
	good := archive(t, "the state")
	cases := []struct {
		name string
		arc  []byte
		want string
	}{
		{"not gzip", []byte("state"), "not gzip"},
		{"truncated", good[:len(good)/2], "reading"},
		{"cut in the gzip trailer", good[:len(good)-1], "reading the archive"},
		{"gzip checksum altered", func() []byte {
			b := bytes.Clone(good)
			b[len(b)-8] ^= 0xff // the trailer's CRC-32
			return b
		}(), "reading the archive"},
		{"bytes after the archive", append(bytes.Clone(good), "more"...), "reading the archive"},
		{"a second gzip stream after the archive", append(bytes.Clone(good), archive(t, "another state")...), "bytes after its gzip stream"},
		{"data after the tar, in the gzip stream", func() []byte {
			raw, err := io.ReadAll(must(gzip.NewReader(bytes.NewReader(good))))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			zw := gzip.NewWriter(&out)
			zw.Write(append(raw, "more"...))
			zw.Close()
			return out.Bytes()
		}(), "data after its end"},
		{"altered state", rewrite(t, good, func(n string, b []byte) (string, []byte, bool) {
			if n == stateFile {
				b = []byte("the stale")
			}
			return n, b, true
		}), "state.bin does not match its checksum"},
		{"altered meta", rewrite(t, good, func(n string, b []byte) (string, []byte, bool) {
			if n == metaFile {
				b = bytes.Replace(b, []byte("42"), []byte("43"), 1)
			}
			return n, b, true
		}), "meta.json does not match its checksum"},
		{"no checksums", rewrite(t, good, func(n string, b []byte) (string, []byte, bool) { return n, b, n != sumsFile }), "SHA256SUMS is missing"},
		{"no state", rewrite(t, good, func(n string, b []byte) (string, []byte, bool) { return n, b, n != stateFile }), "state.bin is missing"},
		{"stray file", rewrite(t, good, func(n string, b []byte) (string, []byte, bool) {
			if n == sumsFile {
				return "../etc/passwd", b, true
			}
			return n, b, true
		}), `unexpected file "../etc/passwd"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Read(bytes.NewReader(tc.arc), dir)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

// FuzzRead: no input makes Read panic; what it refuses it refuses as
// ErrInvalid, leaving nothing behind in the directory; what it accepts is
// a state of the size its meta.json gives, which Write archives again to
// the same meta and state.
func FuzzRead(f *testing.F) {
	f.Add(archive(f, "the state"))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		a, err := Read(bytes.NewReader(b), dir)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a refused archive left %v behind", left)
			}
			return
		}
		state, err := io.ReadAll(a.State)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if int64(len(state)) != a.Meta.Size {
			t.Fatalf("state is %d bytes, meta.json says %d", len(state), a.Meta.Size)
		}
		var again bytes.Buffer
		if err := Write(&again, a.Meta, bytes.NewReader(state)); err != nil {
			t.Fatalf("an accepted archive cannot be written again: %v", err)
		}
		back, err := Read(&again, dir)
		if err != nil {
			t.Fatalf("an accepted archive, written again, is refused: %v", err)
		}
		defer back.Close()
		state2, _ := io.ReadAll(back.State)
		if !bytes.Equal(state, state2) || !back.Meta.CreateTime.Equal(a.Meta.CreateTime) {
			t.Fatalf("an accepted archive does not survive being written again: %+v, %+v", a.Meta, back.Meta)
		}
		back.Meta.CreateTime = a.Meta.CreateTime
		if back.Meta != a.Meta {
			t.Fatalf("an accepted archive does not survive being written again: %+v, %+v", a.Meta, back.Meta)
		}
	})
}

// A state larger than the room left in the directory it is extracted to
// is refused before a byte of it is written: a small compressed archive
// can claim terabytes.
func TestArchive_RefusesAStateLargerThanTheRoomLeft(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: stateFile, Mode: 0o600, Size: 1 << 50, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(make([]byte, 1<<20)); err != nil { // the rest is never read
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err := Read(&buf, dir)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "bytes free") {
		t.Fatalf("err = %v, want the state refused for want of room", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if err := CheckRoom(dir, 1<<20); err != nil {
		t.Fatalf("a megabyte: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
