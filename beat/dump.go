package beat

import (
	"encoding/binary"
	"fmt"
	"io"
)

// DumpMagic starts a raw buffer dump.
const DumpMagic = "MTXBEAT1"

// WriteDump writes records in the raw dump format that
// "matrixexec analyze" reads: the 8 bytes "MTXBEAT1", then each record as a
// little-endian uint64 (bit 63 enter, bits 62..43 function id, bits 42..0
// time in ms). A zero record is an empty slot.
func WriteDump(w io.Writer, records []uint64) error {
	buf := make([]byte, len(DumpMagic)+8*len(records))
	copy(buf, DumpMagic)
	for i, r := range records {
		binary.LittleEndian.PutUint64(buf[len(DumpMagic)+8*i:], r)
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("beat: write dump: %w", err)
	}
	return nil
}
