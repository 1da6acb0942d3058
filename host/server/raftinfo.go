package server

import "github.com/hashicorp/raft"

// RaftServer is one server of the raft configuration, as Nomad's operator
// API shows it.
type RaftServer struct {
	ID           string
	Node         string
	Address      string
	Leader       bool
	Voter        bool
	RaftProtocol string
}

// RaftConfiguration returns the servers of the raft configuration and the
// index it was made at.
func (s *Server) RaftConfiguration() ([]RaftServer, uint64, error) {
	f := s.raftLayer.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, 0, err
	}
	leader, _ := s.raftLayer.raft.LeaderWithID()
	var out []RaftServer
	for _, sv := range f.Configuration().Servers {
		out = append(out, RaftServer{ID: string(sv.ID), Node: string(sv.ID), Address: string(sv.Address),
			Leader: sv.Address == leader, Voter: sv.Suffrage == raft.Voter, RaftProtocol: "3"})
	}
	return out, f.Index(), nil
}
