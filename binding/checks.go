package binding

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc/codes"
)

// Service-parameter keys as they travel: HTTP headers and gRPC metadata.
const (
	hdrVersion          = a2a.SvcParamVersion    // "A2A-Version"
	hdrExtensions       = a2a.SvcParamExtensions // "A2A-Extensions"
	hdrLegacyExtensions = "X-A2A-Extensions"     // 0.3 spelling
)

// requestError is a rejection produced by the binding itself, before the
// RequestHandler runs. It carries its representation on every binding.
type requestError struct {
	reason  string // google.rpc.ErrorInfo reason, also selects the a2a-go sentinel on the client
	message string
	meta    map[string]string

	jsonrpcCode int
	httpStatus  int
	httpStatusT string // google.rpc.Status "status" string
	grpcCode    codes.Code
}

func (e *requestError) Error() string { return e.message }

// errVersionNotSupported is VersionNotSupportedError (spec §3.3.2, §5.4).
func errVersionNotSupported(declared string, supported []string) *requestError {
	return &requestError{
		reason:      "VERSION_NOT_SUPPORTED",
		message:     fmt.Sprintf("A2A protocol version %q is not supported; supported versions: %s", declared, strings.Join(supported, ", ")),
		meta:        map[string]string{"requestedVersion": declared, "supportedVersions": strings.Join(supported, ",")},
		jsonrpcCode: -32009,
		httpStatus:  http.StatusBadRequest,
		httpStatusT: "FAILED_PRECONDITION",
		grpcCode:    codes.FailedPrecondition,
	}
}

// errExtensionRequired is ExtensionSupportRequiredError.
func errExtensionRequired(missing []string) *requestError {
	return &requestError{
		reason:      "EXTENSION_SUPPORT_REQUIRED",
		message:     "the agent requires extensions the request does not declare in A2A-Extensions: " + strings.Join(missing, ", "),
		meta:        map[string]string{"missingExtensions": strings.Join(missing, ",")},
		jsonrpcCode: -32008,
		httpStatus:  http.StatusBadRequest,
		httpStatusT: "FAILED_PRECONDITION",
		grpcCode:    codes.FailedPrecondition,
	}
}

// errContentType is ContentTypeNotSupportedError, used for request bodies
// that are not JSON. Over HTTP+JSON it is 415 Unsupported Media Type: the request's own body
// type is an HTTP matter (RFC 9110 §15.5.16), unlike unsupported media types of message parts.
func errContentType(ct string) *requestError {
	return &requestError{
		reason:      "CONTENT_TYPE_NOT_SUPPORTED",
		message:     contentTypeMessage(ct),
		jsonrpcCode: -32005,
		httpStatus:  http.StatusUnsupportedMediaType,
		httpStatusT: "INVALID_ARGUMENT",
		grpcCode:    codes.InvalidArgument,
	}
}

func contentTypeMessage(ct string) string {
	if ct == "" {
		return "a request body needs a Content-Type: application/json or application/a2a+json"
	}
	return fmt.Sprintf("unsupported Content-Type %q; expected application/json or application/a2a+json", ct)
}

// errBodyTooLarge rejects a body over the configured limit.
func errBodyTooLarge(limit int64) *requestError {
	return &requestError{
		reason:      "INVALID_REQUEST",
		message:     fmt.Sprintf("request body exceeds %d bytes", limit),
		meta:        map[string]string{"maxBodyBytes": fmt.Sprint(limit)},
		jsonrpcCode: -32600,
		httpStatus:  http.StatusRequestEntityTooLarge,
		httpStatusT: "RESOURCE_EXHAUSTED",
		grpcCode:    codes.ResourceExhausted,
	}
}

// errNoRoute answers a REST path that is no A2A route.
func errNoRoute(method, path string) *requestError {
	return &requestError{
		reason:      "METHOD_NOT_FOUND",
		message:     fmt.Sprintf("no A2A HTTP+JSON route for %s %s", method, path),
		jsonrpcCode: -32601,
		httpStatus:  http.StatusNotFound,
		httpStatusT: "NOT_FOUND",
		grpcCode:    codes.Unimplemented,
	}
}

// normalizeVersion reduces a declared A2A-Version to Major.Minor (§3.6: patch
// numbers must not be considered). ok is false for a malformed value.
// The empty string is returned as is.
func normalizeVersion(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", true
	}
	parts := strings.Split(v, ".")
	if len(parts) > 3 {
		return "", false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || len(p) > 9 {
			return "", false
		}
	}
	trim := func(s string) string {
		if t := strings.TrimLeft(s, "0"); t != "" {
			return t
		}
		return "0"
	}
	minor := "0"
	if len(parts) > 1 {
		minor = trim(parts[1])
	}
	return trim(parts[0]) + "." + minor, true
}

// splitList splits comma-separated header values into trimmed, non-empty items.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// requiredExtensions lists the URIs of the extensions the card marks required.
func requiredExtensions(card *a2a.AgentCard) []string {
	if card == nil {
		return nil
	}
	var out []string
	for _, ext := range card.Capabilities.Extensions {
		if ext.Required && ext.URI != "" {
			out = append(out, ext.URI)
		}
	}
	return out
}

// missingExtensions returns the required URIs not among declared.
func missingExtensions(required, declared []string) []string {
	var missing []string
	for _, uri := range required {
		if !slices.Contains(declared, uri) {
			missing = append(missing, uri)
		}
	}
	return missing
}
