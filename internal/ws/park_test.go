package ws

import (
	"errors"
	"testing"
	"time"
)

// parkServer returns a client and the accepted server end, after the server end parked with a
// wake function that signals woke.
func parkServer(t *testing.T) (c, s *Conn, woke chan struct{}) {
	t.Helper()
	if !canPark {
		t.Skip("parking needs epoll (Linux)")
	}
	srv, accepted := acceptServer(t)
	c = dial(t, wsURL(srv))
	s = <-accepted
	t.Cleanup(s.shutdown)
	woke = make(chan struct{}, 2)
	if !s.Park(func() { woke <- struct{}{} }) {
		t.Fatal("Park() = false on a plain TCP connection")
	}
	if s.br != nil {
		t.Error("a parked connection still holds its read buffer")
	}
	return c, s, woke
}

func awaitWake(t *testing.T, woke chan struct{}) {
	t.Helper()
	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatal("the parked connection was not woken")
	}
}

func isParked(c *Conn) bool { return thePark.isParked(c) }

// A parked connection wakes once when a message arrives, reads it without blocking, and can
// write while parked.
func TestParkWakesOnMessage(t *testing.T) {
	c, s, woke := parkServer(t)
	if err := s.WriteMessages(Text, []byte("while parked")); err != nil {
		t.Fatalf("WriteMessages while parked: %v", err)
	}
	if _, got, err := c.ReadMessage(0); err != nil || string(got) != "while parked" {
		t.Fatalf("client ReadMessage() = %q, %v, want the server's message", got, err)
	}
	select {
	case <-woke:
		t.Fatal("a write woke the parked reader")
	case <-time.After(50 * time.Millisecond):
	}
	if err := c.WriteMessages(Text, []byte("wake up")); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, woke)
	if isParked(s) {
		t.Error("still parked after waking")
	}
	s.IdleAfter = 10 * time.Millisecond // the message is there: ReadMessage must not wait for it
	if _, got, err := s.ReadMessage(0); err != nil || string(got) != "wake up" {
		t.Fatalf("ReadMessage() after waking = %q, %v, want \"wake up\"", got, err)
	}
	// Parking again works, and a second wake-up comes.
	if !s.Park(func() { woke <- struct{}{} }) {
		t.Fatal("Park() = false the second time")
	}
	c.WriteMessages(Text, []byte("again"))
	awaitWake(t, woke)
	if _, got, err := s.ReadMessage(0); err != nil || string(got) != "again" {
		t.Fatalf("ReadMessage() after the second wake = %q, %v", got, err)
	}
}

// Closing a parked connection, from either end or by vanishing, wakes it once, and its reader
// then sees the end.
func TestParkEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(c, s *Conn)
		want func(error) bool
	}{
		{"server Close", func(c, s *Conn) {
			go c.ReadMessage(0) // answers the close frame
			s.Close(StatusNormal, "")
		}, func(err error) bool { return errors.Is(err, ErrClosed) }},
		{"client Close", func(c, s *Conn) {
			go c.Close(StatusGoingAway, "bye")
		}, func(err error) bool {
			var ce *CloseError
			return errors.As(err, &ce) && ce.Code == StatusGoingAway
		}},
		{"peer vanishes", func(c, s *Conn) {
			c.rwc.Close() // no close frame
		}, func(err error) bool { return errors.Is(err, ErrClosed) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s, woke := parkServer(t)
			tc.end(c, s)
			awaitWake(t, woke)
			_, _, err := s.ReadMessage(0)
			if !tc.want(err) {
				t.Errorf("ReadMessage() after %s = %v", tc.name, err)
			}
			if isParked(s) {
				t.Error("still parked")
			}
			s.shutdown()
			select {
			case <-woke:
				t.Error("woken twice")
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

// Park declines when input is already buffered: the caller reads it instead.
func TestParkWithBufferedInput(t *testing.T) {
	if !canPark {
		t.Skip("parking needs epoll (Linux)")
	}
	srv, accepted := acceptServer(t)
	c := dial(t, wsURL(srv))
	s := <-accepted
	t.Cleanup(s.shutdown)
	c.WriteMessages(Text, []byte("one"), []byte("two"))
	if _, got, err := s.ReadMessage(0); err != nil || string(got) != "one" {
		t.Fatalf("ReadMessage() = %q, %v", got, err)
	}
	if s.Park(func() { t.Error("woken") }) {
		t.Fatal("Park() = true with a message buffered")
	}
	if _, got, err := s.ReadMessage(0); err != nil || string(got) != "two" {
		t.Fatalf("ReadMessage() = %q, %v", got, err)
	}
}
