package provider

import "io"

// Single returns a Stream of one frame: a whole non-streaming response body.
func Single(body []byte, finish bool, u Usage) Stream {
	return &single{frame: Frame{Data: body, Content: true, Finish: finish}, usage: u}
}

type single struct {
	frame Frame
	usage Usage
	sent  bool
}

func (s *single) Next() (Frame, error) {
	if s.sent {
		return Frame{}, io.EOF
	}
	s.sent = true
	return s.frame, nil
}

func (s *single) Usage() Usage { return s.usage }
func (s *single) Close() error { return nil }
