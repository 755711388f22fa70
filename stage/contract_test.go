package stage_test

import (
	"testing"

	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/stage/stagetest"
)

func TestRingContract(t *testing.T) {
	stagetest.Run(t, func(t *testing.T, name string, capacity int, hooks stage.Hooks[stagetest.Entry]) stage.Stage[stagetest.Entry] {
		s, err := stage.NewRing(name, capacity, hooks)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestQueueContract(t *testing.T) {
	stagetest.Run(t, func(t *testing.T, name string, capacity int, hooks stage.Hooks[stagetest.Entry]) stage.Stage[stagetest.Entry] {
		s, err := stage.NewQueue(name, capacity, hooks)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
