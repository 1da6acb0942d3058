package goplugin

import (
	"os/exec"
	"testing"
	"time"
)

// TestZombie: a process that has exited reads as a zombie until it is
// reaped, and not before it exits or after; stop kills a plugin's group
// at that moment, while the group's id is still the plugin's.
func TestZombie(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read line")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if zombie(cmd) {
		t.Fatal("a running process reads as a zombie")
	}
	in.Close() // read ends: the shell exits
	deadline := time.Now().Add(10 * time.Second)
	for !zombie(cmd) {
		if time.Now().After(deadline) {
			t.Fatal("the exited, unreaped process never read as a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Wait()
	if zombie(cmd) {
		t.Fatal("a reaped process reads as a zombie")
	}
	if zombie(exec.Command("sh")) {
		t.Fatal("a process never started reads as a zombie")
	}
}
