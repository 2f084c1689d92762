module matrixbench.example/user

go 1.24.0

require github.com/matrixgo/matrix v0.0.0

replace github.com/matrixgo/matrix => ../..
