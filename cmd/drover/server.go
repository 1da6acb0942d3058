package main

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type serverMembersCommand struct{ *meta }

func (c *serverMembersCommand) Synopsis() string { return "Display the cluster's servers" }

func (c *serverMembersCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover server members [options]

  Lists the servers of the cluster (GET /v1/agent/members): each server of
  the raft configuration at its RPC address, "alive" if it answered the
  agent just now and "failed" if not, and which one leads. A server that
  runs alone lists itself at its API address.
` + apiOptions + jsonOption)
}

func (c *serverMembersCommand) Run(args []string) int {
	fs := c.flags("server members", true)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var members httpapi.ServerMembers
	if _, err := cl.Get(bg, "/v1/agent/members", &members); err != nil {
		return c.errorf("reading the members: %v", err)
	}
	if c.json {
		return c.printJSON(&members)
	}
	var leader string
	if _, err := cl.Get(bg, "/v1/status/leader", &leader); err != nil {
		return c.errorf("reading the leader: %v", err)
	}
	rows := [][]string{{"Name", "Address", "Port", "Status", "Leader", "Raft Version", "Build", "Datacenter", "Region"}}
	for _, m := range members.Members {
		port := strconv.Itoa(int(m.Port))
		rows = append(rows, []string{m.Name, m.Addr, port, m.Status, strconv.FormatBool(leader == net.JoinHostPort(m.Addr, port)),
			m.Tags["raft_vsn"], m.Tags["build"], m.Tags["dc"], m.Tags["region"]})
	}
	c.table(rows)
	return exitOK
}

type raftListPeersCommand struct{ *meta }

func (c *raftListPeersCommand) Synopsis() string { return "Display the raft peers" }

func (c *raftListPeersCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator raft list-peers [options]

  Lists the servers of the raft configuration (GET
  /v1/operator/raft/configuration): ID, address, state and whether each
  votes.

Options:

  -stale   Answer from the server asked, not the leader: what to use
           when the cluster has lost its leader or its quorum.
` + apiOptions + jsonOption)
}

func (c *raftListPeersCommand) Run(args []string) int {
	fs := c.flags("operator raft list-peers", true)
	stale := fs.Bool("stale", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	path := "/v1/operator/raft/configuration"
	if *stale {
		path += "?stale"
	}
	var conf httpapi.RaftConfigurationResponse
	if _, err := cl.Get(bg, path, &conf); err != nil {
		return c.errorf("reading the raft configuration: %v", err)
	}
	if c.json {
		return c.printJSON(&conf)
	}
	rows := [][]string{{"Node", "ID", "Address", "State", "Voter", "RaftProtocol"}}
	for _, s := range conf.Servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		rows = append(rows, []string{s.Node, s.ID, s.Address, state, strconv.FormatBool(s.Voter), s.RaftProtocol})
	}
	c.table(rows)
	return exitOK
}

type raftRemovePeerCommand struct{ *meta }

func (c *raftRemovePeerCommand) Synopsis() string {
	return "Remove a server from the raft configuration"
}

func (c *raftRemovePeerCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator raft remove-peer [options] -peer-id=ID | -peer-address=HOST:PORT

  Removes a server from the raft configuration (DELETE
  /v1/operator/raft/peer), on the leader: for a server that is gone for
  good, so that the others no longer count it towards their quorum. Stop
  the server first: while it runs with retry_join it asks to be added back.
` + apiOptions + `

Remove-peer options:

  -peer-id=ID              The server's raft ID (its name).
  -peer-address=HOST:PORT  The server's RPC address.
`)
}

func (c *raftRemovePeerCommand) Run(args []string) int {
	fs := c.flags("operator raft remove-peer", false)
	id := fs.String("peer-id", "", "")
	addr := fs.String("peer-address", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	if (*id == "") == (*addr == "") {
		return c.errorf("give one of -peer-id and -peer-address")
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	q := url.Values{}
	if *id != "" {
		q.Set("id", *id)
	} else {
		q.Set("address", *addr)
	}
	if _, err := cl.Delete(bg, "/v1/operator/raft/peer?"+q.Encode(), nil); err != nil {
		return c.errorf("removing the peer: %v", err)
	}
	c.ui.Output("Removed peer " + *id + *addr)
	return exitOK
}

type raftTransferCommand struct{ *meta }

func (c *raftTransferCommand) Synopsis() string { return "Hand the cluster's lead to another server" }

func (c *raftTransferCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator raft transfer-leadership [options] [-peer-id=ID | -peer-address=HOST:PORT]

  Asks the leader to hand the lead over (PUT
  /v1/operator/raft/transfer-leadership): to the server -peer-id or
  -peer-address names, or to any other voter. The new leader rebuilds the
  broker and the blocked evals from the state, as after any election.
` + apiOptions + `

Transfer-leadership options:

  -peer-id=ID              The server to lead (its name).
  -peer-address=HOST:PORT  The server to lead, by its raft address.
`)
}

func (c *raftTransferCommand) Run(args []string) int {
	fs := c.flags("operator raft transfer-leadership", false)
	id := fs.String("peer-id", "", "")
	addr := fs.String("peer-address", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	if *id != "" && *addr != "" {
		return c.errorf("give at most one of -peer-id and -peer-address")
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	q := url.Values{}
	if *id != "" {
		q.Set("id", *id)
	}
	if *addr != "" {
		q.Set("address", *addr)
	}
	if _, err := cl.Put(bg, "/v1/operator/raft/transfer-leadership?"+q.Encode(), nil, nil); err != nil {
		return c.errorf("transferring the lead: %v", err)
	}
	c.ui.Output("Leadership transferred")
	return exitOK
}
