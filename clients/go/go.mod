module github.com/troupe-rs/troupe/clients/go

go 1.26.0

require (
	github.com/fxamacker/cbor/v2 v2.10.0
	github.com/nats-io/nats.go v1.56.0
)

require (
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
