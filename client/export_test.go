package client

// DropSession closes the WebSocket session under a capnweb client, as a dropped connection
// would end it, and reports whether there was one.
func DropSession(c *Client) bool {
	t, ok := c.transport.(*capnwebTransport)
	if !ok {
		return false
	}
	t.mu.Lock()
	s := t.sess
	t.mu.Unlock()
	if s == nil {
		return false
	}
	_ = s.Close()
	return true
}
