// Package snapshot is the file format of operator snapshots (drover
// operator snapshot save|restore|inspect, /v1/operator/snapshot): a
// gzipped tar archive, as Nomad's, of
//
//	meta.json    the raft snapshot's version, ID, index, term and size, and who wrote it
//	state.bin    the FSM's snapshot of the whole state
//	SHA256SUMS   the SHA-256 of the two files above
//
// Read checks every part before anything uses the state: a truncated,
// altered or foreign file is refused with what is wrong with it.
package snapshot

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Meta describes an archived snapshot. Its fields named as raft's
// SnapshotMeta's have their meaning, as in Nomad's archives.
type Meta struct {
	// Version is raft's snapshot format version.
	Version int
	ID      string
	Index   uint64
	Term    uint64
	// Size is state.bin's length in bytes.
	Size int64
	// DroverVersion is the Drover version that wrote the archive.
	DroverVersion string
	CreateTime    time.Time
}

// ErrInvalid wraps every reason an archive is refused.
var ErrInvalid = errors.New("snapshot: invalid archive")

const (
	metaFile  = "meta.json"
	stateFile = "state.bin"
	sumsFile  = "SHA256SUMS"
	// maxSmallFile bounds meta.json and SHA256SUMS.
	maxSmallFile = 1 << 20
)

// Write archives meta and the state (meta.Size bytes read from state) to w.
func Write(w io.Writer, meta Meta, state io.Reader) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	add := func(name string, size int64, r io.Reader) (string, error) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return "", err
		}
		h := sha256.New()
		n, err := io.Copy(tw, io.TeeReader(r, h))
		if err != nil {
			return "", err
		}
		if n != size {
			return "", fmt.Errorf("snapshot: %s is %d bytes, want %d", name, n, size)
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	mb, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	metaSum, err := add(metaFile, int64(len(mb)), bytes.NewReader(mb))
	if err != nil {
		return err
	}
	stateSum, err := add(stateFile, meta.Size, state)
	if err != nil {
		return err
	}
	sums := fmt.Sprintf("%s  %s\n%s  %s\n", metaSum, metaFile, stateSum, stateFile)
	if _, err := add(sumsFile, int64(len(sums)), strings.NewReader(sums)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Archive is a read and verified archive whose state is in a file.
type Archive struct {
	Meta Meta
	// State is state.bin, extracted; Close removes it.
	State *os.File
}

// Close removes the extracted state.
func (a *Archive) Close() error {
	name := a.State.Name()
	err := a.State.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}

// Headroom is the free space CheckRoom leaves, beyond what it is asked
// for: the state's file system is often the raft log's.
const Headroom = 64 << 20

// CheckRoom refuses to write size bytes into dir's file system when that
// would leave it less than Headroom free (a compressed archive can expand
// a thousandfold).
func CheckRoom(dir string, size int64) error {
	free, ok := available(dir)
	if !ok || size <= free-Headroom {
		return nil
	}
	return fmt.Errorf("the state is %d bytes; %s has %d bytes free, and %d must stay free", size, dir, free, int64(Headroom))
}

// Read reads an archive from r, extracting its state into a file in dir
// ("" for the system's temporary directory), and verifies it: every part
// present once, the sizes and checksums as recorded. The returned state
// file is positioned at its start.
func Read(r io.Reader, dir string) (*Archive, error) {
	// gzip reads a bufio.Reader byte by byte, without reading ahead, so
	// what is left in br after the gzip stream is what followed it.
	br := bufio.NewReader(r)
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: not gzip-compressed: %v", ErrInvalid, err)
	}
	gz.Multistream(false)
	state, err := os.CreateTemp(dir, "drover-snapshot-*.bin")
	if err != nil {
		return nil, err
	}
	arc := &Archive{State: state}
	fail := func(format string, args ...any) (*Archive, error) {
		_ = arc.Close()
		return nil, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	tr := tar.NewReader(gz)
	sums := map[string]string{}
	var metaJSON, sumsText []byte
	var stateSize int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail("reading the archive: %v", err)
		}
		if _, seen := sums[hdr.Name]; seen {
			return fail("%s appears twice", hdr.Name)
		}
		var h hash.Hash = sha256.New()
		switch hdr.Name {
		case metaFile, sumsFile:
			b, err := io.ReadAll(io.LimitReader(io.TeeReader(tr, h), maxSmallFile+1))
			if err != nil {
				return fail("reading %s: %v", hdr.Name, err)
			}
			if len(b) > maxSmallFile {
				return fail("%s is larger than %d bytes", hdr.Name, maxSmallFile)
			}
			if hdr.Name == metaFile {
				metaJSON = b
			} else {
				sumsText = b
			}
		case stateFile:
			if err := CheckRoom(filepath.Dir(state.Name()), hdr.Size); err != nil {
				return fail("%v", err)
			}
			if stateSize, err = io.Copy(state, io.TeeReader(tr, h)); err != nil {
				return fail("reading %s: %v", stateFile, err)
			}
		default:
			return fail("unexpected file %q", hdr.Name)
		}
		sums[hdr.Name] = hex.EncodeToString(h.Sum(nil))
	}
	// The tar ends before the gzip stream does: reading that to its end
	// checks the stream's own checksum and length, so that a file cut in
	// its last bytes is refused as damaged, as is anything after the tar,
	// compressed or not (another gzip stream, say), as Nomad's restore
	// refuses it. Nothing after the tar is decompressed beyond one byte.
	var rest [1]byte
	if n, err := io.ReadFull(gz, rest[:]); n > 0 {
		return fail("reading the archive: data after its end")
	} else if !errors.Is(err, io.EOF) {
		return fail("reading the archive: %v", err)
	}
	if _, err := br.Peek(1); err == nil {
		return fail("reading the archive: bytes after its gzip stream")
	} else if !errors.Is(err, io.EOF) {
		return fail("reading the archive: %v", err)
	}
	for _, name := range []string{metaFile, stateFile, sumsFile} {
		if _, ok := sums[name]; !ok {
			return fail("%s is missing", name)
		}
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(sumsText)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			return fail("%s: malformed line %q", sumsFile, line)
		}
		want[name] = sum
	}
	for _, name := range []string{metaFile, stateFile} {
		if want[name] != sums[name] {
			return fail("%s does not match its checksum (the file was altered or truncated)", name)
		}
	}
	if err := json.Unmarshal(metaJSON, &arc.Meta); err != nil {
		return fail("%s: %v", metaFile, err)
	}
	if arc.Meta.Size != stateSize {
		return fail("%s is %d bytes, %s says %d", stateFile, stateSize, metaFile, arc.Meta.Size)
	}
	if _, err := state.Seek(0, io.SeekStart); err != nil {
		_ = arc.Close()
		return nil, err
	}
	return arc, nil
}
