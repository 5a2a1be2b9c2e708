module github.com/troupe-rs/troupe/clients/go

go 1.26
