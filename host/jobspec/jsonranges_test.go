package jobspec

import "testing"

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"Count": "count", "MaxClientDisconnect": "max_client_disconnect", "HealthCheck": "health_check",
		"MinHealthyTime": "min_healthy_time", "CPU": "cpu", "NodePool": "node_pool", "AutoPromote": "auto_promote",
		"CPUHardLimit": "cpu_hard_limit", "Attempts": "attempts", "Port2": "port2",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAPIJSONRanges(t *testing.T) {
	src := []byte("{\"Job\": {\n  \"ID\": \"x\",\n  \"TaskGroups\": [\n    {\"Name\": \"web\",\n     \"Count\": 2,\n     \"Tasks\": [{\"Name\": \"a\", \"Resources\": {\"MemoryMB\": 5}}]}\n  ]\n}}")
	r := apiJSONRanges("j.json", src)
	for path, line := range map[string]int{
		Path{}.Attr("id").key():                                                                2,
		Path{}.Block("group", "web").key():                                                     4,
		Path{}.Block("group", "web").Attr("count").key():                                       5,
		Path{}.Block("group", "web").Block("task", "a").Attr("resources").key():                6,
		Path{}.Block("group", "web").Block("task", "a").Attr("resources").Attr("memory").key(): 6,
	} {
		if got, ok := r[path]; !ok || got.Start.Line != line {
			t.Errorf("%q: %+v (found %t), want line %d", path, got, ok, line)
		}
	}
	for _, bad := range []string{"", "{", `{"ID": [}`, "[1, 2]", `"text"`} {
		if r := apiJSONRanges("bad.json", []byte(bad)); len(r) != 0 {
			t.Errorf("%q: ranges %v from JSON that cannot be read", bad, r)
		}
	}
}
