package binding

import (
	"context"
	"encoding/json"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// SessionsGRPCService is the gRPC service of the sessions extension: one unary method per
// operation, named as the JSON-RPC method, each taking and returning a google.protobuf.Struct
// that holds the operation's JSON request and result.
const SessionsGRPCService = "a2awebcap.sessions.v1.SessionService"

// registerExtGRPC registers the operations ops as the unary methods of the gRPC service name,
// in a stable order.
func registerExtGRPC(s *grpc.Server, name string, ops map[string]extOp) {
	if len(ops) == 0 {
		return
	}
	desc := grpc.ServiceDesc{ServiceName: name, HandlerType: (*any)(nil), Metadata: name}
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		desc.Methods = append(desc.Methods, grpc.MethodDesc{MethodName: n, Handler: extGRPCHandler("/"+name+"/"+n, ops[n])})
	}
	s.RegisterService(&desc, struct{}{})
}

// extGRPCHandler serves one operation: the Struct's JSON is the request, the result's JSON the
// Struct answered; errors are gRPC statuses with an ErrorInfo, as for A2A's methods.
func extGRPCHandler(full string, op extOp) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(structpb.Struct)
		if err := dec(in); err != nil {
			return nil, err
		}
		call := func(ctx context.Context, req any) (any, error) {
			raw, err := protojson.Marshal(req.(*structpb.Struct))
			if err != nil {
				return nil, grpcError(asRequestError(invalidParams(err.Error())))
			}
			md, _ := metadata.FromIncomingContext(ctx)
			res, err := op(extCall(ctx, metadataHeaders(md)), raw)
			if err != nil {
				return nil, grpcError(asRequestError(err))
			}
			b, err := json.Marshal(res)
			if err != nil {
				return nil, grpcError(asRequestError(err))
			}
			out := new(structpb.Struct)
			if err := protojson.Unmarshal(b, out); err != nil {
				return nil, grpcError(asRequestError(err))
			}
			return out, nil
		}
		if icpt == nil {
			return call(ctx, in)
		}
		return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, call)
	}
}
