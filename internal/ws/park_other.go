//go:build !linux

package ws

const canPark = false

type parker struct{}

var thePark parker

func (*parker) park(*Conn, func()) bool { return false }
func (*parker) unpark(*Conn)            {}
func (*parker) isParked(*Conn) bool     { return false }
