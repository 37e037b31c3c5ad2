module dg

go 1.19
