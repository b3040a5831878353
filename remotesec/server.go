package remotesec

import (
	"context"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
)

// Server is a guarded remote as a lifecycle component (internal/lifecycle): node runs one per
// process, started before the parts that use it (the fleet link, cluster membership) and stopped
// after them.
type Server struct {
	sys *actor.ActorSystem
	cfg Config

	mu sync.Mutex
	r  *remote.Remote
}

// NewServer returns the remote of sys, configured by cfg, not listening yet.
func NewServer(sys *actor.ActorSystem, cfg Config) *Server { return &Server{sys: sys, cfg: cfg} }

// Start listens (Start's errors: a busy address, a non-loopback listener without TLS).
func (s *Server) Start(context.Context) error {
	r, err := Start(s.sys, s.cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.r = r
	s.mu.Unlock()
	return nil
}

// Stop tells the connected peers this process goes and stops listening (Stop; protoactor bounds
// its own wait for gRPC to drain to 10 s).
func (s *Server) Stop(context.Context) error {
	s.mu.Lock()
	r := s.r
	s.r = nil
	s.mu.Unlock()
	Stop(r)
	return nil
}

// Address is the address peers reach this process at ("" before Start).
func (s *Server) Address() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil {
		return ""
	}
	return s.sys.Address()
}
