package binding

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// TestExtendedCardNotDeclared: a card that does not declare capabilities.extendedAgentCard
// makes GetExtendedAgentCard UNSUPPORTED_OPERATION on every binding (A2A 1.0 §3.3.4). Raw
// calls: a2a-go's client refuses it itself, from the card, before asking.
func TestExtendedCardNotDeclared(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	const want = "UNSUPPORTED_OPERATION"

	if got := jsonrpcError(t, do(t, "POST", ts.baseURL+DefaultJSONRPCPath, jsonrpcBody("GetExtendedAgentCard", map[string]any{}))).Reason; got != want {
		t.Errorf("JSON-RPC: reason %s, want %s", got, want)
	}
	if got := restError(t, do(t, "GET", ts.baseURL+DefaultRESTPath+"/extendedAgentCard", nil)).Reason; got != want {
		t.Errorf("HTTP+JSON: reason %s, want %s", got, want)
	}
	conn, err := grpc.NewClient(ts.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = a2apb.NewA2AServiceClient(conn).GetExtendedAgentCard(t.Context(), &a2apb.GetExtendedAgentCardRequest{})
	if got := grpcWireError(err).Reason; got != want {
		t.Errorf("gRPC: %v, want %s", err, want)
	}
	if got := callReason(t, ts.dialCapnweb(t, "", nil).Main().Call("getExtendedAgentCard")); got != want {
		t.Errorf("capnweb: reason %s, want %s", got, want)
	}
	batch := capnweb.NewBatchSession(ts.baseURL+DefaultCapnwebPath, nil, nil)
	defer batch.Close()
	if got := callReason(t, batch.Main().Call("getExtendedAgentCard")); got != want {
		t.Errorf("capnweb batch: reason %s, want %s", got, want)
	}
}

// TestExtendedCardInterfaces: an extended card the handler gives without interfaces is served
// with those of the public card, completed like it, on each HTTP binding; over gRPC, with the
// gRPC interface the call came to.
func TestExtendedCardInterfaces(t *testing.T) {
	t.Parallel()
	card := testCard()
	card.Capabilities.ExtendedAgentCard = true
	ts := startServer(t, serverConfig{card: card, engine: true, opts: &Options{Authenticate: tokenAuth}, gopts: &GRPCOptions{Authenticate: tokenAuth}, extended: true})
	want := map[a2a.TransportProtocol]string{
		ProtocolCapnweb:               ts.baseURL + DefaultCapnwebPath,
		a2a.TransportProtocolJSONRPC:  ts.baseURL + DefaultJSONRPCPath,
		a2a.TransportProtocolHTTPJSON: ts.baseURL + DefaultRESTPath,
		a2a.TransportProtocolGRPC:     ts.grpcAddr,
	}
	for _, proto := range transports {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			c := ts.client(t, proto, withParams("Authorization", "Bearer alice"))
			ext, err := c.GetExtendedAgentCard(t.Context(), &a2a.GetExtendedAgentCardRequest{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[a2a.TransportProtocol]string{}
			for _, in := range ext.SupportedInterfaces {
				got[in.ProtocolBinding] = in.URL
			}
			exp := want
			if proto == a2a.TransportProtocolGRPC {
				exp = map[a2a.TransportProtocol]string{a2a.TransportProtocolGRPC: ts.grpcAddr}
			}
			if ext.Name != "echo (extended)" || len(got) != len(exp) {
				t.Errorf("extended card %q with interfaces %v, want %v", ext.Name, got, exp)
			}
			for p, u := range exp {
				if got[p] != u {
					t.Errorf("interface %s = %q, want %q", p, got[p], u)
				}
			}
		})
	}
}
