//go:build !llamacpp

package main

const haveLlama = false
