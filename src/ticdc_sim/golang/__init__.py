"""What Go does that Python does differently, where TiCDC's bytes depend on it.

One module per Go package mirrored: `strconv` (shortest float digits, `FormatFloat`,
`Quote`), `json` (the escaping of encoding/json, easyjson and jsoniter) and `sort`
(`sort.Sort`'s exact permutation). Pure functions; nothing here imports the rest of ticdc_sim.
"""
