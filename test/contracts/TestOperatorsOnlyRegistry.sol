// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice For the tests only: a registry that has `operators(address)` and nothing else of Blast's
/// interface (no readStatus), a ban being the operator 0xbBbB…bBbB, as some registries are read.
contract TestOperatorsOnlyRegistry {
    mapping(address contractAddress => address operator) public operators;

    function setOperator(address contractAddress, address operator) external {
        operators[contractAddress] = operator;
    }
}
