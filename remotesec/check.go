package remotesec

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Why a message was refused: the label of the rejection counter and the start of the error.
const (
	reasonProtocol   = "protocol"   // not protoactor's connect-then-batches conversation
	reasonPeer       = "peer"       // the announced address is not the peer's (IP or certificate)
	reasonType       = "type"       // a type name off the allow-list or unknown to this process
	reasonSerializer = "serializer" // a serializer other than protobuf (0)
	reasonIndex      = "index"      // a type/target/sender index outside its table
	reasonTarget     = "target"     // an actor this process does not expose, or another address
	reasonSender     = "sender"     // a sender (or watcher, or terminated actor) at another address
	reasonRPC        = "rpc"        // any RPC but the Remoting/Receive stream
	reasonIdentity   = "identity"   // the message speaks for someone the peer is not (Config.Inspect)
)

// rejection is a refused message: reason is a counter label, err says what exactly.
type rejection struct {
	reason string
	err    error
}

func (r *rejection) Error() string { return r.reason + ": " + r.err.Error() }

func reject(reason, format string, args ...any) *rejection {
	return &rejection{reason: reason, err: fmt.Errorf(format, args...)}
}

// Built-in protoactor messages every remote member needs: remote Watch/Unwatch/Terminated, and the
// answer to a request whose target does not exist (so the requester fails fast instead of timing
// out). actor.Stop, actor.PoisonPill and everything else stay out unless a caller lists them.
var builtinTypes = []string{"actor.Watch", "actor.Unwatch", "actor.Terminated", "actor.DeadLetterResponse"}

// policy is what one process accepts; it is immutable once built.
type policy struct {
	types    map[string]bool // full names that may arrive
	targets  map[string]bool // actor ids peers may address
	futures  bool            // whether replies to this process's futures ("future$…") may arrive
	self     func() string   // this process's advertised address, known once the server runs
	maxTypes int             // bound on a batch's tables, so a batch cannot make us loop for long
	inspect  func(typeName string, data []byte, peer Peer) error
}

// streamState is one peer stream's conversation so far.
type streamState struct {
	address string            // the address announced in ConnectRequest, checked against the peer; "" before
	cert    *x509.Certificate // the peer's verified certificate (mTLS), nil without TLS
}

// peerCheck says whether a peer may announce the host:port address (see guard.peerCheck).
type peerCheck func(address string) error

// Peer is what the guard knows about the other end of a stream, for Config.Inspect.
type Peer struct {
	// Address is the address the peer announced (and the guard verified).
	Address string
	// Certificate is the peer's verified client certificate; nil without TLS.
	Certificate *x509.Certificate
}

// check validates one message received on a stream, updating the stream's state. It never
// panics on any input: every index is checked before use.
func (p *policy) check(st *streamState, msg *remote.RemoteMessage, peerOK peerCheck) *rejection {
	switch m := msg.GetMessageType().(type) {
	case *remote.RemoteMessage_ConnectRequest:
		if st.address != "" {
			return reject(reasonProtocol, "a second ConnectRequest on one stream")
		}
		sc := m.ConnectRequest.GetServerConnection()
		if sc == nil {
			return reject(reasonProtocol, "ConnectRequest without a ServerConnection")
		}
		if _, _, err := net.SplitHostPort(sc.GetAddress()); err != nil {
			return reject(reasonPeer, "ConnectRequest address %q: %v", sc.GetAddress(), err)
		}
		if err := peerOK(sc.GetAddress()); err != nil {
			return reject(reasonPeer, "ConnectRequest address %q: %v", sc.GetAddress(), err)
		}
		st.address = sc.GetAddress()
		return nil
	case *remote.RemoteMessage_MessageBatch:
		if st.address == "" {
			return reject(reasonProtocol, "MessageBatch before ConnectRequest")
		}
		return p.checkBatch(st, m.MessageBatch)
	default:
		return reject(reasonProtocol, "unexpected %T from a peer", msg.GetMessageType())
	}
}

func (p *policy) checkBatch(st *streamState, b *remote.MessageBatch) *rejection {
	if n := max(len(b.GetTypeNames()), len(b.GetTargets()), len(b.GetSenders())); n > p.maxTypes {
		return reject(reasonIndex, "batch tables of %d entries (at most %d)", n, p.maxTypes)
	}
	for i, name := range b.GetTypeNames() {
		if !p.types[name] {
			return reject(reasonType, "type_names[%d] %q is not accepted here", i, name)
		}
		if _, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name)); err != nil {
			return reject(reasonType, "type_names[%d] %q is not registered in this process", i, name)
		}
	}
	self := p.self()
	for i, t := range b.GetTargets() {
		if t == nil {
			return reject(reasonTarget, "targets[%d] is nil", i)
		}
		if t.GetAddress() != self {
			return reject(reasonTarget, "targets[%d] address %q is not this process (%s)", i, t.GetAddress(), self)
		}
		if !p.targetAllowed(t.GetId()) {
			return reject(reasonTarget, "targets[%d] %q is not an actor this process exposes", i, t.GetId())
		}
	}
	for i, s := range b.GetSenders() {
		if s == nil || s.GetAddress() != st.address {
			return reject(reasonSender, "senders[%d] address %q differs from the stream's %q", i, s.GetAddress(), st.address)
		}
	}
	for i, e := range b.GetEnvelopes() {
		if e == nil {
			return reject(reasonProtocol, "envelopes[%d] is nil", i)
		}
		if e.GetSerializerId() != 0 {
			return reject(reasonSerializer, "envelopes[%d] serializer_id %d (only protobuf, 0)", i, e.GetSerializerId())
		}
		if e.GetTypeId() < 0 || int(e.GetTypeId()) >= len(b.GetTypeNames()) {
			return reject(reasonIndex, "envelopes[%d] type_id %d outside type_names[%d]", i, e.GetTypeId(), len(b.GetTypeNames()))
		}
		if e.GetTarget() < 0 || int(e.GetTarget()) >= len(b.GetTargets()) {
			return reject(reasonIndex, "envelopes[%d] target %d outside targets[%d]", i, e.GetTarget(), len(b.GetTargets()))
		}
		if e.GetSender() < 0 || int(e.GetSender()) > len(b.GetSenders()) {
			return reject(reasonIndex, "envelopes[%d] sender %d outside senders[%d] (1-based, 0 = none)", i, e.GetSender(), len(b.GetSenders()))
		}
		typeName := b.GetTypeNames()[e.GetTypeId()]
		if err := checkSystemMessage(typeName, e.GetMessageData(), st.address); err != nil {
			return reject(reasonSender, "envelopes[%d]: %v", i, err)
		}
		if p.inspect != nil {
			if err := p.inspect(typeName, e.GetMessageData(), Peer{Address: st.address, Certificate: st.cert}); err != nil {
				return reject(reasonIdentity, "envelopes[%d] %s: %v", i, typeName, err)
			}
		}
	}
	return nil
}

// targetAllowed: an exposed actor, or (when enabled) a reply to one of this process's futures.
func (p *policy) targetAllowed(id string) bool {
	if p.targets[id] {
		return true
	}
	return p.futures && strings.HasPrefix(id, "future$") && len(id) > len("future$")
}

// checkSystemMessage makes sure a watch-protocol message only names actors of the peer itself:
// otherwise a peer could make this process report terminations to, or dial, any address.
func checkSystemMessage(typeName string, data []byte, peer string) error {
	var pids []*actor.PID
	switch typeName {
	case "actor.Watch":
		var m actor.Watch
		if err := proto.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("actor.Watch: %w", err)
		}
		pids = []*actor.PID{m.GetWatcher()}
	case "actor.Unwatch":
		var m actor.Unwatch
		if err := proto.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("actor.Unwatch: %w", err)
		}
		pids = []*actor.PID{m.GetWatcher()}
	case "actor.Terminated":
		var m actor.Terminated
		if err := proto.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("actor.Terminated: %w", err)
		}
		pids = []*actor.PID{m.GetWho()}
	default:
		return nil
	}
	for _, pid := range pids {
		if pid == nil {
			return fmt.Errorf("%s without a PID", typeName)
		}
		if pid.GetAddress() != peer {
			return fmt.Errorf("%s names %q, not the peer's own address %q", typeName, pid.GetAddress(), peer)
		}
	}
	return nil
}

// errNoHost is returned for an address without a host part.
var errNoHost = errors.New("no host")
