//go:build llamacpp

package main

const haveLlama = true
