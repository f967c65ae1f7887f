package jsonstr

// NumberEnd reads the JSON number that starts at data[i] —
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? — and returns the index just past it, or
// false if what starts there is not one. Like any reader of JSON, the caller then checks what
// follows: "01" is the number 0 followed by 1.
func NumberEnd(data []byte, i int) (int, bool) {
	digits := func() bool {
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i < len(data) && data[i] == '0' {
		i++
	} else if !digits() {
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(data) && data[i]|0x20 == 'e' {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}
