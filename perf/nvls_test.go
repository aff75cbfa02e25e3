package perf

import (
	"path/filepath"
	"testing"
)

// NCCL's NVLS buffers (doc.go, "NVLink SHARP buffers"): 288 MiB per rank of
// each counted communicator, only on NVLS nodes, over NVLink, for more than
// two ranks on a node; the KV budget shrinks by exactly that.
func TestNVLSBytes(t *testing.T) {
	m, err := LoadModelConfig(filepath.Join("testdata", "llama-3.1-405b-fbgemm-fp8.json"))
	if err != nil {
		t.Fatal(err)
	}
	nvlink, err := LookupLink("nvlink")
	if err != nil {
		t.Fatal(err)
	}
	pcie, err := LookupLink("pcie")
	if err != nil {
		t.Fatal(err)
	}
	const perRank = 301989888 // NCCL's nvlsPerRankSize in vLLM issue #9699
	cases := []struct {
		name        string
		gpu         string
		tp, pp      int
		nodes       int
		link        Link
		comms       int
		wantPerRank int64 // multiples of nvlsPerRankSize
	}{
		{"H100 SXM TP 8, two communicators", "H100-SXM", 8, 1, 1, Link{}, 2, 16},
		{"the NVLink link named", "H100-SXM", 8, 1, 1, nvlink, 2, 16},
		{"H200 TP 4, PP 2: the TP group counts", "H200", 4, 2, 1, Link{}, 2, 8},
		{"B200 TP 8, one communicator", "B200", 8, 1, 1, Link{}, 1, 8},
		{"TP 2, PP 4: NCCL keeps NVLS off", "H100-SXM", 2, 4, 1, Link{}, 2, 0},
		{"TP 16 over two nodes: 8 local ranks", "H100-SXM", 16, 1, 2, Link{}, 2, 16},
		{"TP 8 over four nodes: 2 local ranks", "H100-SXM", 8, 1, 4, Link{}, 2, 0},
		{"no communicator counted", "H100-SXM", 8, 1, 1, Link{}, 0, 0},
		{"A100: NVSwitch without multicast", "A100-80GB", 8, 1, 1, Link{}, 2, 0},
		{"H100 NVL: bridged pairs", "H100-NVL", 8, 1, 1, Link{}, 2, 0},
		{"PCIe link", "H100-SXM", 8, 1, 1, pcie, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := DefaultDeployment(m, mustGPU(t, c.gpu))
			d.TensorParallel, d.PipelineParallel, d.Nodes, d.Link, d.NVLSCommunicators = c.tp, c.pp, c.nodes, c.link, c.comms
			d.MaxModelLen = 8192
			withBuffers, err := d.Capacity()
			if err != nil {
				t.Fatal(err)
			}
			if want := c.wantPerRank * perRank; withBuffers.NVLSBytes != want {
				t.Fatalf("NVLS buffers %d bytes, want %d (%d × nvlsPerRankSize)", withBuffers.NVLSBytes, want, c.wantPerRank)
			}
			d.NVLSCommunicators = 0
			without, err := d.Capacity()
			if err != nil {
				t.Fatal(err)
			}
			if got := without.KVCacheBytes - withBuffers.KVCacheBytes; got != withBuffers.NVLSBytes {
				t.Errorf("the buffers took %d bytes of KV cache, want %d", got, withBuffers.NVLSBytes)
			}
			if got := withBuffers.NonTorchBytes - without.NonTorchBytes; got != withBuffers.NVLSBytes {
				t.Errorf("non-torch memory grew by %d bytes, want the buffers' %d", got, withBuffers.NVLSBytes)
			}
		})
	}
}
