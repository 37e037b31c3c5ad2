module libdg.dev/dg

go 1.19
