// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @title PointsOperatorRegistry
/// @notice Blast's Points registry interface (IBlastPoints) for any other EVM chain: a contract
/// names its points operator on chain, usually in its constructor, and points-ledger reads it
/// from here (CHAIN_RPC_URL with OPERATOR_REGISTRY_ADDRESS).
/// @dev As on Blast, a ban is seen as the operator 0xbBbB…bBbB by readers of `operators`; here the
/// operator named before the ban is kept, so an unban restores it.
contract PointsOperatorRegistry is Ownable {
    /// @notice The operator a banned contract has, as Blast's registry shows it.
    address public constant BANNED_OPERATOR = 0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB;

    mapping(address contractAddress => address operator) private _operators;
    mapping(address contractAddress => bool banned) private _banned;

    /// @dev Both fields indexed (Blast's own event indexes none), so a reader can follow one contract's changes.
    event PointsOperator(address indexed contractAddress, address indexed operator);

    error OperatorAlreadyConfigured(address operator);
    error NotOperator(address caller);
    error ContractBanned(address contractAddress);
    error InvalidOperator(address operator);

    constructor(address owner_) Ownable(owner_) {}

    /// @notice Names the caller's operator while it has none (a contract calls it from its constructor).
    function configurePointsOperator(address operator) external {
        address current = _operators[msg.sender];
        if (current != address(0)) revert OperatorAlreadyConfigured(current);
        _setOperator(msg.sender, operator);
    }

    /// @notice Changes the operator of `contractAddress`; only its current operator may, and not while it is banned.
    function configurePointsOperatorOnBehalf(address contractAddress, address operator) external {
        if (_banned[contractAddress]) revert ContractBanned(contractAddress);
        address current = _operators[contractAddress];
        if (current == address(0) || msg.sender != current) revert NotOperator(msg.sender);
        _setOperator(contractAddress, operator);
    }

    /// @notice The operator (0xbBbB…bBbB while banned), whether it is banned, and the contract's code size.
    function readStatus(address contractAddress) external view returns (address operator, bool isBanned, uint256 codeLength) {
        return (operators(contractAddress), _banned[contractAddress], contractAddress.code.length);
    }

    /// @notice The operator of `contractAddress` (zero when none; 0xbBbB…bBbB while banned).
    function operators(address contractAddress) public view returns (address) {
        return _banned[contractAddress] ? BANNED_OPERATOR : _operators[contractAddress];
    }

    /// @notice The owner bans or unbans a contract; each change is a PointsOperator event with the operator now in force.
    function setBanned(address contractAddress, bool banned) external onlyOwner {
        if (_banned[contractAddress] == banned) return;
        _banned[contractAddress] = banned;
        emit PointsOperator(contractAddress, operators(contractAddress));
    }

    function _setOperator(address contractAddress, address operator) private {
        if (operator == address(0) || operator == BANNED_OPERATOR) revert InvalidOperator(operator);
        _operators[contractAddress] = operator;
        emit PointsOperator(contractAddress, operator);
    }
}
