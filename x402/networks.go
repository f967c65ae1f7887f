package x402

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// chainIDs are the EVM networks known by name, as x402 names them.
var chainIDs = map[string]int64{
	"ethereum": 1, "sepolia": 11155111,
	"base": 8453, "base-sepolia": 84532,
	"avalanche": 43114, "avalanche-fuji": 43113,
	"polygon": 137, "polygon-amoy": 80002,
	"optimism": 10, "arbitrum": 42161,
	"iotex": 4689,
}

// ChainID returns the EIP-155 chain ID of an x402 network: a name x402 uses ("base",
// "base-sepolia", …) or a CAIP-2 identifier "eip155:N".
func ChainID(network string) (*big.Int, error) {
	if id, ok := chainIDs[network]; ok {
		return big.NewInt(id), nil
	}
	if n, ok := strings.CutPrefix(network, "eip155:"); ok {
		if id, err := strconv.ParseUint(n, 10, 63); err == nil && id > 0 && strconv.FormatUint(id, 10) == n {
			return new(big.Int).SetUint64(id), nil
		}
	}
	return nil, fmt.Errorf("x402: unknown network %q (want one of x402's names or eip155:CHAIN_ID)", network)
}

// Asset is a token the "exact" scheme can move: an EIP-3009 token contract on a network, with
// the name and version of its EIP-712 domain.
type Asset struct {
	Network  string
	Address  string // the contract
	Name     string // EIP-712 domain name
	Version  string // EIP-712 domain version
	Decimals int    // for display only
}

// Well-known assets: Circle's USDC, whose EIP-712 domains x402's own examples use.
var (
	USDCBase        = Asset{Network: "base", Address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", Name: "USD Coin", Version: "2", Decimals: 6}
	USDCBaseSepolia = Asset{Network: "base-sepolia", Address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Name: "USDC", Version: "2", Decimals: 6}
)

// DefaultMaxTimeout is the maxTimeoutSeconds Exact gives a requirement.
const DefaultMaxTimeout = 300

// Exact returns the requirements of a payment of amount (atomic units, decimal) of asset to
// payTo, in the "exact" scheme, for what description says. Resource and the rest may be set on
// the result; a merchant fills an empty Resource.
func Exact(asset Asset, payTo, amount, description string) Requirements {
	return Requirements{
		Scheme: SchemeExact, Network: asset.Network, MaxAmountRequired: amount, Asset: asset.Address,
		PayTo: payTo, Description: description, MimeType: "application/json",
		MaxTimeoutSeconds: DefaultMaxTimeout,
		Extra:             map[string]any{"name": asset.Name, "version": asset.Version},
	}
}

// Assets are the well-known assets, which AssetOf finds.
var Assets = []Asset{USDCBase, USDCBaseSepolia}

// AssetOf returns the well-known asset of contract address on network (the address in any
// case), and whether there is one.
func AssetOf(network, address string) (Asset, bool) {
	for _, a := range Assets {
		if a.Network == network && strings.EqualFold(a.Address, address) {
			return a, true
		}
	}
	return Asset{}, false
}
